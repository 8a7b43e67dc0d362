package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ScreenshotsDir is the folder of a run's screenshots of the console's
// pages, inside the artifacts folder; ScreenshotIndex lists them.
const (
	ScreenshotsDir  = "screenshots"
	ScreenshotIndex = "index.json"
)

// Screenshot is one PNG of a console page taken during a run.
type Screenshot struct {
	// File is the PNG's name inside ScreenshotsDir ("zones.png").
	File string `json:"file"`
	// Caption says what the picture shows, in the user's words.
	Caption string `json:"caption"`
}

// WriteScreenshotIndex writes the index of the screenshots in dir (an
// artifacts folder's ScreenshotsDir).
func WriteScreenshotIndex(dir string, shots []Screenshot) error {
	b, err := json.MarshalIndent(struct {
		Screenshots []Screenshot `json:"screenshots"`
	}{shots}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ScreenshotIndex), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("screenshot index: %w", err)
	}
	return nil
}

// ReadScreenshots reads the screenshots of the run whose artifacts folder
// is dir: none (and no error) when it has no index. Entries whose file is
// not a plain name of an existing PNG are left out.
func ReadScreenshots(dir string) ([]Screenshot, error) {
	sdir := filepath.Join(dir, ScreenshotsDir)
	b, err := os.ReadFile(filepath.Join(sdir, ScreenshotIndex))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("screenshot index: %w", err)
	}
	var idx struct {
		Screenshots []Screenshot `json:"screenshots"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("screenshot index %s: %w", filepath.Join(sdir, ScreenshotIndex), err)
	}
	var out []Screenshot
	for _, s := range idx.Screenshots {
		if s.File == "" || path.Base(s.File) != s.File || strings.ContainsAny(s.File, `\/`) || !strings.HasSuffix(s.File, ".png") {
			continue
		}
		if _, err := os.Stat(filepath.Join(sdir, s.File)); err != nil {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}
