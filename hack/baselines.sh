#!/usr/bin/env bash
# baselines.sh: run the clean baselines N times on one platform and tally them.
#
#   hack/baselines.sh PLATFORM [N] [OUT]      PLATFORM: local or kind; N: rounds (10); OUT: folder (_artifacts/baselines-PLATFORM)
#
# A round is three suites on the quick profile, each its own `scaleproof run`:
#   steps   the five and the contract scenarios on the step policy
#   hpa     the five and spike, every zone on the hpa policy (--policy hpa)
#   canary  the five, each zone with a canary worker (--canary)
# Each run's artifacts go to OUT/<round>-<suite>/; OUT/tally.tsv gets one line a run (round, suite, exit code, seconds,
# the scenarios that did not pass), and the last lines printed count the runs that passed per suite (all
# rounds in the tally: a second call adds rounds after the first's).
# Every run is also appended to the ledger, docs/baselines/PLATFORM.tsv (LEDGER overrides it), with its date and
# the code it ran (the last commit outside docs/; -dirty: with uncommitted changes): commit it, so that runs add up across machines and sessions; the
# last lines also count the ledger's runs of this commit.
# Run it on an idle machine: a CI or a build beside it takes the CPU the time-to-scale bounds are measured against.
set -u
platform=${1:?usage: hack/baselines.sh local|kind [N] [OUT]}
n=${2:-10}
out=${3:-_artifacts/baselines-$platform}
bin=${SCALEPROOF:-./bin/scaleproof}
[ -x "$bin" ] || { echo "baselines: $bin not found: run make build first" >&2; exit 2; }
mkdir -p "$out"
tally=$out/tally.tsv
[ -s "$tally" ] || printf 'round\tsuite\texit\tseconds\tnot passed\n' > "$tally"
ledger=${LEDGER:-docs/baselines/$platform.tsv}
mkdir -p "$(dirname "$ledger")"
[ -s "$ledger" ] || printf 'date\tcommit\tsuite\texit\tseconds\tnot passed\n' > "$ledger"
# the code the binary was built from: the last commit that changed anything outside docs/ (so committing a
# ledger or a page does not restart the count), -dirty when the tree has uncommitted changes outside docs/
commit=$(git log -1 --format=%h -- . ':(exclude)docs' 2>/dev/null)
[ -n "$commit" ] || commit=unknown
[ -z "$(git status --porcelain -- . ':(exclude)docs' 2>/dev/null)" ] || commit=$commit-dirty
# a second call adds rounds after the ones the tally already has
first=$(awk -F'\t' 'NR > 1 && $1 + 0 > m { m = $1 + 0 } END { print m + 1 }' "$tally")
# Ctrl-C reaches the running scaleproof too (it writes what it measured); its row is tallied, then the loop ends
stop=0
trap 'stop=1' INT TERM
for ((r = first; r < first + n && !stop; r++)); do
	for suite in steps hpa canary; do
		# shellcheck disable=SC2054 # --scenarios takes one value, commas and all
		case $suite in
		steps) args=(--scenarios viewer-refused,max-1,sustained,burst,max-lowered,contract) ;;
		hpa) args=(--policy hpa) ;;
		canary) args=(--canary) ;;
		esac
		dir=$out/$r-$suite
		rm -rf "$dir"
		start=$(date +%s)
		"$bin" run --platform "$platform" --profile quick --screenshots=false --quiet --json --artifacts "$dir" "${args[@]}" \
			> "$dir.json" 2> "$dir.log"
		rc=$?
		took=$(($(date +%s) - start))
		# the verdicts of scenarios that neither passed nor were skipped by design
		bad=$(python3 -c 'import json, sys
try:
    vs = json.load(open(sys.argv[1])).get("verdicts") or []
except Exception as e:
    print("no verdicts (%s)" % e); sys.exit()
print(",".join(v["scenario"] for v in vs if not v.get("passed") and not v.get("skipped")) or "-")' "$dir.json")
		printf '%s\t%s\t%s\t%s\t%s\n' "$r" "$suite" "$rc" "$took" "$bad" | tee -a "$tally"
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$suite" "$rc" "$took" "$bad" >> "$ledger"
		[ "$stop" = 0 ] || break
	done
done
[ "$stop" = 0 ] || echo "baselines: interrupted; the tally so far is in $tally" >&2
for suite in steps hpa canary; do
	awk -F'\t' -v s="$suite" 'NR > 1 && $2 == s { runs++; if ($3 == 0) ok++ } END { printf "%s: %d of %d runs passed\n", s, ok, runs }' "$tally"
	awk -F'\t' -v s="$suite" -v c="$commit" -v l="$ledger" 'NR > 1 && $2 == c && $3 == s { runs++; if ($4 == 0) ok++ }
		END { printf "%s at %s: %d of %d runs passed (%s)\n", s, c, ok, runs, l }' "$ledger"
done
