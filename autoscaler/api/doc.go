// Package api holds the console's wire types that a client reads and
// writes: a zone's policy (step or hpa), its status and the rounds it keeps.
// The console (autoscaler/controller, autoscaler/console) serves them and
// the harness (scenarios/consoleclient) reads them, so one definition
// stands for both; PromDuration renders the hpa policy's query window in
// PromQL's duration syntax for both. It imports only the standard library.
package api
