// Package contracttest proves, on the local platform, that each contract
// scenario (scenarios.Contract) catches the planted bugs it is listed
// against in autoscaler/faults.Catalog, and passes on the clean reference
// system. Its tests build scaleproof-ref and run real processes on
// 127.0.0.1; they are skipped in -short mode.
package contracttest
