package api

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"kinetoscope/api/store"
)

// metrics counts what the server did, for GET /metrics. It is written by
// hand in the Prometheus text format: a handful of counters do not need
// the client library.
type metrics struct {
	mu            sync.Mutex
	requests      map[reqKey]int64
	durations     map[string]*summary // by route
	uploads       int64
	uploadBytes   int64
	rejects       int64
	analyses      summary
	analysisFails int64
	inFlight      int64
	retries       int64 // jobs of the shared queue taken again here
}

type reqKey struct {
	method, route string
	code          int
}

type summary struct {
	count int64
	sum   float64
}

func newMetrics() *metrics {
	return &metrics{requests: map[reqKey]int64{}, durations: map[string]*summary{}}
}

// middleware counts requests by route and status.
func (m *metrics) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		code := c.Response().Status
		if he, ok := err.(*echo.HTTPError); ok {
			code = he.Code
		} else if err != nil {
			code = http.StatusInternalServerError
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		route := c.Path()
		m.requests[reqKey{c.Request().Method, route, code}]++
		d := m.durations[route]
		if d == nil {
			d = &summary{}
			m.durations[route] = d
		}
		d.count++
		d.sum += time.Since(start).Seconds()
		return err
	}
}

func (m *metrics) upload(bytes int64) {
	m.mu.Lock()
	m.uploads++
	m.uploadBytes += bytes
	m.mu.Unlock()
}

func (m *metrics) rejected() {
	m.mu.Lock()
	m.rejects++
	m.mu.Unlock()
}

// retried counts a shared-queue job taken here after an earlier attempt.
func (m *metrics) retried() {
	m.mu.Lock()
	m.retries++
	m.mu.Unlock()
}

func (m *metrics) analysisStarted() {
	m.mu.Lock()
	m.inFlight++
	m.mu.Unlock()
}

func (m *metrics) analysisDone(d time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight--
	m.analyses.count++
	m.analyses.sum += d.Seconds()
	if err != nil {
		m.analysisFails++
	}
}

// getMetrics handles GET /metrics.
func (s *Server) getMetrics(c echo.Context) error {
	counts, err := s.meta.Counts(c.Request().Context())
	if err != nil {
		return err
	}
	qs, err := s.queue.stats(c.Request().Context())
	if err != nil {
		return err
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	s.stats.write(w, counts)
	fmt.Fprintf(w, "# HELP kinetoscope_replica_info The replica that answered.\n# TYPE kinetoscope_replica_info gauge\nkinetoscope_replica_info{replica=%q} 1\n", s.replica)
	simple(w, "kinetoscope_analysis_retries_total", "counter", "Shared-queue jobs this replica took after an earlier attempt failed or its replica died.", s.stats.retryCount())
	if qs != nil {
		metric(w, "kinetoscope_queue_jobs", "gauge", "Analysis jobs of the shared queue by state, every replica's.")
		for _, st := range slices.Sorted(maps.Keys(qs.States)) {
			fmt.Fprintf(w, "kinetoscope_queue_jobs{state=%q} %d\n", st, qs.States[st])
		}
		simple(w, "kinetoscope_queue_retried_jobs", "gauge", "Analysis jobs of the shared queue that needed more than one attempt.", qs.Retried)
	}
	return nil
}

// retryCount returns the retries counted.
func (m *metrics) retryCount() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.retries
}

// write prints the metrics in the Prometheus text format.
func (m *metrics) write(w io.Writer, counts map[store.Status]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	metric(w, "kinetoscope_http_requests_total", "counter", "HTTP requests by method, route and status code.")
	keys := make([]reqKey, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.route != b.route {
			return a.route < b.route
		}
		if a.method != b.method {
			return a.method < b.method
		}
		return a.code < b.code
	})
	for _, k := range keys {
		fmt.Fprintf(w, "kinetoscope_http_requests_total{method=%q,route=%q,code=\"%d\"} %d\n", k.method, k.route, k.code, m.requests[k])
	}
	metric(w, "kinetoscope_http_request_duration_seconds", "summary", "Time spent answering requests, by route.")
	routes := make([]string, 0, len(m.durations))
	for r := range m.durations {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	for _, r := range routes {
		d := m.durations[r]
		fmt.Fprintf(w, "kinetoscope_http_request_duration_seconds_sum{route=%q} %g\n", r, d.sum)
		fmt.Fprintf(w, "kinetoscope_http_request_duration_seconds_count{route=%q} %d\n", r, d.count)
	}
	simple(w, "kinetoscope_uploads_total", "counter", "Uploads stored as runs.", m.uploads)
	simple(w, "kinetoscope_upload_bytes_total", "counter", "Bytes of uploads stored as runs.", m.uploadBytes)
	simple(w, "kinetoscope_uploads_rejected_total", "counter", "Uploads refused as bad input or too large.", m.rejects)
	metric(w, "kinetoscope_analysis_seconds", "summary", "Time spent analysing runs.")
	fmt.Fprintf(w, "kinetoscope_analysis_seconds_sum %g\nkinetoscope_analysis_seconds_count %d\n", m.analyses.sum, m.analyses.count)
	simple(w, "kinetoscope_analysis_failures_total", "counter", "Analyses that failed.", m.analysisFails)
	simple(w, "kinetoscope_analysis_in_flight", "gauge", "Analyses running now.", m.inFlight)
	metric(w, "kinetoscope_runs", "gauge", "Stored runs by status.")
	for _, st := range []store.Status{store.StatusQueued, store.StatusRunning, store.StatusDone, store.StatusFailed} {
		fmt.Fprintf(w, "kinetoscope_runs{status=%q} %d\n", st, counts[st])
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	simple(w, "go_memstats_heap_inuse_bytes", "gauge", "Heap bytes in use.", int64(ms.HeapInuse))
	simple(w, "go_memstats_sys_bytes", "gauge", "Bytes obtained from the system.", int64(ms.Sys))
	simple(w, "go_goroutines", "gauge", "Goroutines that currently exist.", int64(runtime.NumGoroutine()))
}

func metric(w io.Writer, name, typ, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func simple(w io.Writer, name, typ, help string, v int64) {
	metric(w, name, typ, help)
	fmt.Fprintln(w, name, strconv.FormatInt(v, 10))
}
