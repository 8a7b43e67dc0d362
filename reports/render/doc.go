// Package render turns scaleproof results files (package reports) into what
// people read: the Ramen 0.7.5 published table (text, Markdown), full reports
// (Markdown, self-contained HTML with charts, JSON, JUnit XML), the published
// rows with ratios, and baseline comparisons with tolerances (the release
// sign-off).
//
// Imports only reports of the module: a renderer reads the file format, never
// the harness that wrote it.
package render
