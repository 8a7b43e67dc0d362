// Command loadcmp compares load generators on one loopback target: our
// engine (scenarios/load), vegeta's library and Debian's wrk, each driving
// MCP tools/call at the reference worker (autoscaler/worker, --work-ms 0) on
// 127.0.0.1 with the same number of connections, the client pinned to one
// core and the worker to another (taskset) when possible.
//
// It reports, per generator, calls answered, calls per second, client CPU
// seconds (user + system of the client process, from its rusage), calls per
// client CPU-second, and heap allocations per call (Go clients only). With
// -repeat it runs every generator that many times, interleaved, and
// reports the median of calls per CPU-second.
//
// It lives in its own module so that vegeta's dependencies stay out of
// scaleproof's. Run it with `make bench-load`.
//
// Traffic goes only to the worker it starts on 127.0.0.1.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/scaleproof/scaleproof/scenarios/load"
)

const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{"ms":0}}}`

// clientReport is what a client subprocess prints.
type clientReport struct {
	Engine  string  `json:"engine"`
	Calls   int64   `json:"calls"`
	OK      int64   `json:"ok"`
	WallS   float64 `json:"wall_s"`
	Mallocs uint64  `json:"mallocs"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "client" {
		if err := client(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "loadcmp client:", err)
			os.Exit(1)
		}
		return
	}
	if err := drive(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "loadcmp:", err)
		os.Exit(1)
	}
}

func client(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	engine := fs.String("engine", "ours", "ours (fast client), ours-nethttp, ours-open (constant-arrival-rate at -rate) or vegeta")
	url := fs.String("url", "", "target (127.0.0.1 only)")
	conns := fs.Int("conns", 64, "connections (VUs, workers)")
	d := fs.Duration("d", 5*time.Second, "duration")
	rate := fs.Float64("rate", 0, "ours-open: iterations per second")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !strings.HasPrefix(*url, "http://127.") {
		return fmt.Errorf("url %q: loopback only", *url)
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	rep := clientReport{Engine: *engine}
	switch *engine {
	case "ours", "ours-nethttp", "ours-open":
		exec, err := load.MCPToolCallFast(*url, "work", map[string]any{"ms": 0}, nil,
			load.FastOptions{VUs: *conns, Timeout: 30 * time.Second})
		if err != nil {
			return err
		}
		if *engine == "ours-nethttp" {
			exec = load.MCPToolCall(load.NewHTTPClient(*conns, 30*time.Second, nil), *url, "work", map[string]any{"ms": 0}, nil)
		}
		var m *load.Metrics
		if *engine != "ours-open" {
			p := load.ConstantVUs(*conns, *d)
			p.GracefulStop = 5 * time.Second
			m, err = load.Run(context.Background(), p, exec)
		} else {
			p := load.ConstantArrivalRate(*rate, time.Second, *d, *conns, *conns)
			p.GracefulStop = 5 * time.Second
			m, err = load.RunArrival(context.Background(), p, exec)
		}
		if err != nil {
			return err
		}
		rep.Calls, rep.OK = m.Completed(), m.Count(load.ClassOK)
	case "vegeta":
		atk := vegeta.NewAttacker(vegeta.Connections(*conns), vegeta.MaxConnections(*conns),
			vegeta.Workers(uint64(*conns)), vegeta.MaxWorkers(uint64(*conns)), vegeta.KeepAlive(true))
		tr := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodPost, URL: *url, Body: []byte(body),
			Header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}})
		for r := range atk.Attack(tr, vegeta.Rate{Freq: 0}, *d, "bench") { // max rate: MaxWorkers workers
			rep.Calls++
			if r.Code == http.StatusOK {
				rep.OK++
			}
		}
	default:
		return fmt.Errorf("engine %q", *engine)
	}
	rep.WallS = time.Since(start).Seconds()
	runtime.ReadMemStats(&m1)
	rep.Mallocs = m1.Mallocs - m0.Mallocs
	return json.NewEncoder(os.Stdout).Encode(rep)
}

type row struct {
	engine  string
	calls   int64
	ok      int64
	wallS   float64
	cpuS    float64
	mallocs uint64
	note    string
}

func (r row) perCPU() float64 {
	if r.cpuS == 0 {
		return 0
	}
	return float64(r.ok) / r.cpuS
}

func drive(args []string) error {
	fs := flag.NewFlagSet("loadcmp", flag.ContinueOnError)
	ref := fs.String("ref", "bin/scaleproof-ref", "the scaleproof-ref binary")
	conns := fs.Int("conns", 64, "connections for every generator")
	d := fs.Duration("d", 5*time.Second, "length of each run")
	repeat := fs.Int("repeat", 3, "runs per generator (interleaved); the table shows medians")
	clientCPU := fs.String("client-cpu", "0", "taskset CPU list for the clients")
	workerCPU := fs.String("worker-cpu", "1", "taskset CPU list for the worker")
	engines := fs.String("engines", "ours,ours-nethttp,vegeta,wrk", "generators to run (also: ours-open, constant-arrival-rate at -rate)")
	rate := fs.Float64("rate", 3000, "ours-open: iterations per second")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pin := func(cpus string, argv ...string) []string {
		if _, err := exec.LookPath("taskset"); err != nil || cpus == "" {
			return argv
		}
		return append([]string{"taskset", "-c", cpus}, argv...)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	wargv := pin(*workerCPU, *ref, "worker", "--listen", "127.0.0.1:0", "--max-inflight", "100000", "--work-ms", "0", "--id", "bench")
	w := exec.Command(wargv[0], wargv[1:]...)
	out, err := w.StdoutPipe()
	if err != nil {
		return err
	}
	w.Stderr = nil
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	defer func() { _ = w.Process.Kill(); _ = w.Wait() }()
	url, err := announced(out)
	if err != nil {
		return err
	}
	url += "/mcp"

	script := filepath.Join(os.TempDir(), fmt.Sprintf("loadcmp-%d.lua", os.Getpid()))
	lua := fmt.Sprintf("wrk.method = \"POST\"\nwrk.body = %q\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.headers[\"Accept\"] = \"application/json, text/event-stream\"\n", body)
	if err := os.WriteFile(script, []byte(lua), 0o644); err != nil {
		return err
	}
	defer os.Remove(script)

	results := map[string][]row{}
	list := strings.Split(*engines, ",")
	for i := 0; i < *repeat; i++ { // bounded: repeat × engines runs of d each
		for _, e := range list {
			var r row
			var err error
			switch e {
			case "wrk":
				if _, lerr := exec.LookPath("wrk"); lerr != nil {
					r = row{engine: "wrk", note: "wrk not installed (apt-get install wrk)"}
					break
				}
				r, err = runWrk(pin(*clientCPU, "wrk", "-t1", fmt.Sprintf("-c%d", *conns), fmt.Sprintf("-d%ds", int(d.Seconds())), "-s", script, url))
			default:
				r, err = runClient(pin(*clientCPU, self, "client", "-engine", e, "-url", url, "-conns", strconv.Itoa(*conns), "-d", d.String(),
					"-rate", strconv.FormatFloat(*rate, 'f', -1, 64)))
			}
			if err != nil {
				return fmt.Errorf("%s: %w", e, err)
			}
			r.engine = e
			results[e] = append(results[e], r)
		}
	}

	fmt.Printf("target: reference worker (MCP tools/call work {\"ms\":0}) at %s, pinned to CPU %s; clients pinned to CPU %s; %d connections; %s per run; median of %d\n",
		url, *workerCPU, *clientCPU, *conns, *d, *repeat)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "generator\tcalls ok\tcalls/s\tclient CPU s\tcalls per CPU-s\tallocs/call\tall runs (calls per CPU-s)\t")
	med := map[string]float64{}
	for _, e := range list {
		rs := results[e]
		if len(rs) == 0 || rs[0].note != "" {
			fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t\t\n", e, rs[0].note)
			continue
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].perCPU() < rs[j].perCPU() })
		m := rs[len(rs)/2]
		med[e] = m.perCPU()
		var all []string
		for _, r := range rs {
			all = append(all, fmt.Sprintf("%.0f", r.perCPU()))
		}
		allocs := "n/a"
		if m.mallocs > 0 && m.calls > 0 {
			allocs = fmt.Sprintf("%.1f", float64(m.mallocs)/float64(m.calls))
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.0f\t%s\t%s\t\n", e, m.ok, float64(m.ok)/m.wallS, m.cpuS, m.perCPU(), allocs, strings.Join(all, " "))
	}
	_ = tw.Flush()
	if v, ok := med["vegeta"]; ok && v > 0 {
		fmt.Printf("ours ÷ vegeta: %.2f× (goal ≥ 1.5×)\n", med["ours"]/v)
	}
	if v, ok := med["wrk"]; ok && v > 0 {
		fmt.Printf("ours ÷ wrk:    %.2f× (goal ≥ 0.5×)\n", med["ours"]/v)
	}
	return nil
}

var listening = regexp.MustCompile(`listening (http://127\.[0-9.]+:[0-9]+)`)

func announced(out interface{ Read([]byte) (int, error) }) (string, error) {
	sc := bufio.NewScanner(out)
	for i := 0; i < 100 && sc.Scan(); i++ { // bounded: the worker announces within its first lines
		if m := listening.FindStringSubmatch(sc.Text()); m != nil {
			go func() { // keep draining so the worker never blocks on stdout
				for sc.Scan() {
				}
			}()
			return m[1], nil
		}
	}
	return "", errors.New("worker did not announce a loopback address")
}

func cpuOf(c *exec.Cmd) float64 {
	st := c.ProcessState
	return (st.UserTime() + st.SystemTime()).Seconds()
}

func runClient(argv []string) (row, error) {
	c := exec.Command(argv[0], argv[1:]...)
	c.Stderr = os.Stderr
	b, err := c.Output()
	if err != nil {
		return row{}, err
	}
	var rep clientReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return row{}, fmt.Errorf("client said %q: %w", b, err)
	}
	return row{calls: rep.Calls, ok: rep.OK, wallS: rep.WallS, cpuS: cpuOf(c), mallocs: rep.Mallocs}, nil
}

var (
	wrkTotal = regexp.MustCompile(`(\d+) requests in ([0-9.]+)(m?s)`)
	wrkBad   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

func runWrk(argv []string) (row, error) {
	c := exec.Command(argv[0], argv[1:]...)
	start := time.Now()
	b, err := c.Output()
	if err != nil {
		return row{}, err
	}
	m := wrkTotal.FindSubmatch(b)
	if m == nil {
		return row{}, fmt.Errorf("unexpected wrk output %q", b)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	bad := int64(0)
	if mb := wrkBad.FindSubmatch(b); mb != nil {
		bad, _ = strconv.ParseInt(string(mb[1]), 10, 64)
	}
	return row{calls: n, ok: n - bad, wallS: time.Since(start).Seconds(), cpuS: cpuOf(c)}, nil
}
