# Used by `make test`: passes go test's output through unchanged but holds
# back its last line; at the end it lists the tests that skipped (the file
# SKIPS, written by internal/skips) and then prints that last line, so the
# output still ends with go test's own closing line.
NR > 1 { print prev; fflush() }
{ prev = $0 }
END {
	n = 0
	while ((getline line < SKIPS) > 0) list[n++] = line
	if (n > 0) {
		printf "\n--- SKIPPED: %d test(s) did not run (under CI=true they fail instead):\n", n
		for (i = 0; i < n; i++) print "    " list[i]
		print ""
	}
	if (NR > 0) print prev
}
