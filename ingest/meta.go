package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"kinetoscope/ingest/jsonscan"
)

// topValue handles the value of a top-level key other than traceEvents. raw
// is the value's JSON text.
func (p *builder) topValue(key string, raw []byte) error {
	m := &p.t.Meta
	switch key {
	case "deviceProperties":
		return p.devices(raw)
	case "distributedInfo":
		return p.distributed(raw)
	case "schemaVersion":
		m.SchemaVersion = scalarText(raw)
	case "displayTimeUnit":
		m.DisplayTimeUnit = scalarText(raw)
	case "baseTimeNanoseconds":
		v, ok := jsonscan.ParseInt(raw)
		if !ok {
			p.warn("baseTimeNanoseconds %s is not an integer", excerpt(raw))
		}
		m.BaseTimeNS = v
	case "WARNING", "ERROR":
		m.ProfilerLog = appendProfilerLog(m.ProfilerLog, key, raw)
	default:
		if len(raw) == 0 || raw[0] == '{' || raw[0] == '[' {
			return nil
		}
		if strings.HasSuffix(key, "_version") {
			if m.Versions == nil {
				m.Versions = map[string]string{}
			}
			m.Versions[key] = scalarText(raw)
			return nil
		}
		if m.Other == nil {
			m.Other = map[string]string{}
		}
		m.Other[key] = scalarText(raw)
	}
	return nil
}

// Bounds of Meta.ProfilerLog.
const (
	maxProfilerLog  = 64
	maxProfilerLine = 1024
)

// appendProfilerLog adds the strings of raw, a JSON array of the profiler's
// log lines of one level ("WARNING", "ERROR"), to log as "LEVEL: line". A
// value that is not an array of strings adds nothing.
func appendProfilerLog(log []string, level string, raw []byte) []string {
	var lines []string
	if json.Unmarshal(raw, &lines) != nil {
		return log
	}
	for _, l := range lines {
		if len(log) >= maxProfilerLog {
			break
		}
		if len(l) > maxProfilerLine {
			l = strings.ToValidUTF8(l[:maxProfilerLine], "")
		}
		log = append(log, level+": "+l)
	}
	return log
}

// scalarText returns a JSON scalar as text: a string decoded, anything else
// as written.
func scalarText(raw []byte) string {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// fields is a JSON object decoded one level deep: each member is decoded
// on its own, so that one member of an unexpected type does not lose the
// others.
type fields map[string]json.RawMessage

// objects decodes raw, a JSON array of objects; it reports false for
// anything else.
func objects(raw []byte) ([]fields, bool) {
	var fs []fields
	return fs, json.Unmarshal(raw, &fs) == nil
}

// devices decodes deviceProperties. A second deviceProperties replaces the
// first, as in JSON decoders.
func (p *builder) devices(raw []byte) error {
	ds, ok := objects(raw)
	if !ok {
		p.warn("deviceProperties is not an array of objects: %s", excerpt(raw))
		return nil
	}
	p.t.Meta.Devices = nil
	for _, d := range ds {
		p.t.Meta.Devices = append(p.t.Meta.Devices, Device{
			ID: fieldInt(d["id"]), Name: scalarText(d["name"]), TotalMemBytes: int64(fieldInt(d["totalGlobalMem"])),
			ComputeMajor: fieldInt(d["computeMajor"]), ComputeMinor: fieldInt(d["computeMinor"]), NumSMs: fieldInt(d["numSms"]),
		})
	}
	return nil
}

// fieldInt converts a JSON number (or quoted number) to int, 0 when it is
// not one.
func fieldInt(raw []byte) int {
	v, _ := jsonscan.ParseInt(raw)
	return int(v)
}

// maxRanks bounds the ranks and world sizes believed: a larger one is an
// error in the trace, and would make analysis size tables by it.
const maxRanks = 1 << 20

// distributed decodes distributedInfo; a rank found there is the trace's.
// A second distributedInfo replaces the first, as in JSON decoders.
func (p *builder) distributed(raw []byte) error {
	var di fields
	if err := json.Unmarshal(raw, &di); err != nil {
		p.warn("distributedInfo is not an object: %s", excerpt(raw))
		return nil
	}
	d := &p.t.Meta.Distributed
	*d = Distributed{Present: true, Rank: -1, Backend: scalarText(di["backend"]), NCCLVersion: scalarText(di["nccl_version"])}
	p.t.Rank, p.t.RankSource = -1, "unknown"
	if raw, ok := di["world_size"]; ok {
		if ws, ok := p.count("distributedInfo.world_size", raw); ok && ws > 0 {
			d.WorldSize = ws
		}
	}
	if raw, ok := di["rank"]; ok {
		if r, ok := p.count("distributedInfo.rank", raw); ok {
			d.Rank = r
			p.t.Rank, p.t.RankSource = r, "distributedInfo"
		}
	}
	if raw, ok := di["pg_config"]; ok {
		p.groups(raw)
	}
	return nil
}

// count parses a rank or world size; out of range or not a number, it
// warns and reports false.
func (p *builder) count(what string, raw []byte) (int, bool) {
	v, ok := jsonscan.ParseInt(raw)
	if !ok || v < 0 || v >= maxRanks {
		p.warn("%s %s is not a rank number from 0 to %d: ignored", what, excerpt(raw), maxRanks-1)
		return 0, false
	}
	return int(v), true
}

// groups decodes distributedInfo.pg_config.
func (p *builder) groups(raw []byte) {
	gs, ok := objects(raw)
	if !ok {
		p.warn("distributedInfo.pg_config is not an array of objects: %s", excerpt(raw))
		return
	}
	d := &p.t.Meta.Distributed
	for _, g := range gs {
		size, _ := jsonscan.ParseInt(g["pg_size"])
		ranks, err := parseRanks(g["ranks"])
		if err != nil {
			p.warn("distributedInfo.pg_config ranks: %v", err)
		}
		d.Groups = append(d.Groups, ProcessGroup{Name: scalarText(g["pg_name"]), Desc: scalarText(g["pg_desc"]),
			Size: int(size), Ranks: ranks})
	}
}

// excerpt returns the start of a JSON value for a message, quoted when it
// holds bytes that are not printable ASCII.
func excerpt(raw []byte) string {
	const n = 60
	t, more := string(raw), ""
	if len(t) > n {
		t, more = t[:n], "..."
	}
	for _, c := range []byte(t) {
		if c < ' ' || c > '~' {
			return strconv.QuoteToASCII(t) + more
		}
	}
	return t + more
}

// parseRanks reads a rank list given as a JSON array or as a string like
// "[0, 1]".
func parseRanks(raw json.RawMessage) ([]int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		raw = []byte(scalarText(raw))
	}
	text := strings.Trim(strings.TrimSpace(string(raw)), "[]")
	var ranks []int
	for f := range strings.SplitSeq(text, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		r, err := strconv.Atoi(f)
		if err != nil || r < 0 || r >= maxRanks {
			return ranks, fmt.Errorf("bad rank %q in %s", f, excerpt(raw))
		}
		ranks = append(ranks, r)
	}
	return ranks, nil
}
