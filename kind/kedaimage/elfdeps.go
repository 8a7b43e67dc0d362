package kedaimage

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
)

// libDirs are where a Debian amd64 or arm64 host keeps shared libraries, in
// the order its dynamic loader searches them without an ld.so.cache.
var libDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib",
}

// sharedDeps lists the files a dynamically linked ELF binary needs beside
// it: its program interpreter (at the path the binary names) and every
// DT_NEEDED library, transitively, each at the first libDirs folder that
// holds it (a folder the loader searches by default, so the image needs no
// ld.so.cache). root prefixes every host path read (tests); the returned
// paths are the image's. A static binary needs nothing. A library that
// cannot be found is an error naming it.
func sharedDeps(root, bin string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var visit func(host string) error
	visit = func(p string) error {
		f, err := elf.Open(filepath.Join(root, p))
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		defer f.Close()
		for _, pr := range f.Progs {
			if pr.Type != elf.PT_INTERP {
				continue
			}
			b := make([]byte, pr.Filesz)
			if _, err := pr.ReadAt(b, 0); err != nil {
				return fmt.Errorf("%s: interpreter: %w", p, err)
			}
			interp := string(b)
			for len(interp) > 0 && interp[len(interp)-1] == 0 {
				interp = interp[:len(interp)-1]
			}
			if !seen[interp] {
				seen[interp] = true
				out = append(out, interp)
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return fmt.Errorf("%s: libraries: %w", p, err)
		}
		for _, l := range libs {
			found := ""
			for _, d := range libDirs {
				if _, err := os.Stat(filepath.Join(root, d, l)); err == nil {
					found = filepath.Join(d, l)
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s needs %s, which is in none of %v", p, l, libDirs)
			}
			if seen[found] {
				continue
			}
			seen[found] = true
			out = append(out, found)
			if err := visit(found); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(bin); err != nil {
		return nil, err
	}
	return out, nil
}
