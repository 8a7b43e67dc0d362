package main

import (
	"log/slog"

	"github.com/scaleproof/scaleproof/scenarios/run"
)

// openArtifacts is run.OpenArtifacts for run, up and selftest; its errors
// are usage errors (exit 2): the folder given cannot be written.
func openArtifacts(dir, logName string) (log *slog.Logger, closeLog func(), err error) {
	log, closeLog, err = run.OpenArtifacts(dir, logName)
	if err != nil {
		return nil, nil, withCode(exitUsage, err)
	}
	return log, closeLog, nil
}
