// Package controllertest provides fakes for the controller's clock, ticker
// source, scale target, discovery and scraper, so tests drive rounds
// without sleeping, without a platform and without workers.
//
// Must not import: net/http, or packages of this module other than
// autoscaler, autoscaler/controller and autoscaler/fleet.
package controllertest
