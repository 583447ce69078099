package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
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
		v, ok := parseInt(raw)
		if !ok {
			p.warn("baseTimeNanoseconds %s is not an integer", raw)
		}
		m.BaseTimeNS = v
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

// devices decodes deviceProperties.
func (p *builder) devices(raw []byte) error {
	var ds []struct {
		ID             json.Number `json:"id"`
		Name           string      `json:"name"`
		TotalGlobalMem json.Number `json:"totalGlobalMem"`
		ComputeMajor   json.Number `json:"computeMajor"`
		ComputeMinor   json.Number `json:"computeMinor"`
		NumSms         json.Number `json:"numSms"`
	}
	if err := json.Unmarshal(raw, &ds); err != nil {
		p.warn("deviceProperties not understood: %v", err)
		return nil
	}
	for _, d := range ds {
		p.t.Meta.Devices = append(p.t.Meta.Devices, Device{
			ID: numInt(d.ID), Name: d.Name, TotalMemBytes: int64(numInt(d.TotalGlobalMem)),
			ComputeMajor: numInt(d.ComputeMajor), ComputeMinor: numInt(d.ComputeMinor), NumSMs: numInt(d.NumSms),
		})
	}
	return nil
}

// numInt converts a decoded JSON number to int, 0 when it is not one.
func numInt(n json.Number) int {
	v, _ := parseInt([]byte(n))
	return int(v)
}

// distInfo is distributedInfo as written by Kineto.
type distInfo struct {
	Backend     string          `json:"backend"`
	Rank        json.RawMessage `json:"rank"`
	WorldSize   json.RawMessage `json:"world_size"`
	NCCLVersion json.RawMessage `json:"nccl_version"`
	PGConfig    []struct {
		Name  json.RawMessage `json:"pg_name"`
		Desc  string          `json:"pg_desc"`
		Size  json.RawMessage `json:"pg_size"`
		Ranks json.RawMessage `json:"ranks"`
	} `json:"pg_config"`
}

// distributed decodes distributedInfo; a rank found there is the trace's.
func (p *builder) distributed(raw []byte) error {
	var di distInfo
	if err := json.Unmarshal(raw, &di); err != nil {
		p.warn("distributedInfo not understood: %v", err)
		return nil
	}
	d := &p.t.Meta.Distributed
	d.Present = true
	d.Backend = di.Backend
	d.NCCLVersion = scalarText(di.NCCLVersion)
	if ws, ok := parseInt(di.WorldSize); ok {
		d.WorldSize = int(ws)
	}
	if r, ok := parseInt(di.Rank); ok && r >= 0 {
		d.Rank = int(r)
		p.t.Rank, p.t.RankSource = int(r), "distributedInfo"
	}
	for _, g := range di.PGConfig {
		size, _ := parseInt(g.Size)
		ranks, err := parseRanks(g.Ranks)
		if err != nil {
			p.warn("distributedInfo.pg_config ranks: %v", err)
		}
		d.Groups = append(d.Groups, ProcessGroup{Name: scalarText(g.Name), Desc: g.Desc, Size: int(size), Ranks: ranks})
	}
	return nil
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
		if err != nil {
			return ranks, fmt.Errorf("bad rank %q in %s", f, raw)
		}
		ranks = append(ranks, r)
	}
	return ranks, nil
}
