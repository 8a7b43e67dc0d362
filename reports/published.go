package reports

// PublishedSource is where the published table comes from.
const PublishedSource = "shared/seeds/002_b626072aac762825.txt, \"Load tests\", results of 2026-10-11"

// Published is seed 002's published table ("Results from the last round
// (2026-10-11)"): 64 concurrent tools/call through the edge, one zone with
// max 3, scheduler every 20 s, five scenarios, times from the start of the run.
func Published() []Row {
	mk := func(p string, up, down float64, ok, tooMany int64) Row {
		return Row{Platform: p, UpTo3S: up, BackTo1S: down, Calls: Calls{OK: ok, TooMany: tooMany}, Passed: true, Source: PublishedSource}
	}
	return []Row{
		mk("GKE", 178, 748, 25909, 117),
		mk("EKS", 184, 613, 14975, 1193),
		mk("AKS", 137, 601, 21567, 0),
	}
}
