package analyze

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// LinkPeak is the link bandwidth that a collective's bus bandwidth is held
// against. GBPerS is per GPU and per direction (10^9 bytes a second), the
// figure nccl-tests' bus bandwidth is comparable to: NVLink 4's "900 GB/s"
// counts both directions, so its peak here is 450 GB/s.
type LinkPeak struct {
	Name   string  `json:"name"`     // "NVLink 4", "PCIe Gen5 x16", "120 GB/s"
	GBPerS float64 `json:"gb_per_s"` // per GPU, per direction
	// Source says how it was chosen: "--link nvlink4", or "device name
	// NVIDIA H200".
	Source string `json:"source"`
}

// namedLink returns the link Options.Link names by name, and whether
// there is one.
func namedLink(name string) (LinkPeak, bool) {
	switch name {
	case "nvlink3": // A100: 600 GB/s both directions
		return LinkPeak{Name: "NVLink 3", GBPerS: 300}, true
	case "nvlink4": // H100, H200: 900 GB/s both directions
		return LinkPeak{Name: "NVLink 4", GBPerS: 450}, true
	case "nvlink5": // B200: 1.8 TB/s both directions
		return LinkPeak{Name: "NVLink 5", GBPerS: 900}, true
	case "pcie4x16":
		return LinkPeak{Name: "PCIe Gen4 x16", GBPerS: 32}, true
	case "pcie5x16":
		return LinkPeak{Name: "PCIe Gen5 x16", GBPerS: 64}, true
	}
	return LinkPeak{}, false
}

// LinkNames returns the link names Options.Link accepts besides a number.
func LinkNames() []string {
	return []string{"nvlink3", "nvlink4", "nvlink5", "pcie4x16", "pcie5x16"}
}

// ParseLink reads an Options.Link value: a link name (LinkNames) or a
// bandwidth in GB/s per GPU and direction ("120", "120GB/s"). An empty
// value gives nil: no link was named.
func ParseLink(s string) (*LinkPeak, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "" {
		return nil, nil
	}
	src := "--link " + strings.TrimSpace(s)
	if l, ok := namedLink(v); ok {
		l.Source = src
		return &l, nil
	}
	num := strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(v, "gb/s"), "gbps"))
	g, err := strconv.ParseFloat(num, 64)
	if err != nil || !(g > 0) || g > 1e6 {
		return nil, fmt.Errorf("link %q: want one of %s or a bandwidth in GB/s per GPU and direction", s, strings.Join(LinkNames(), ", "))
	}
	return &LinkPeak{Name: strconv.FormatFloat(g, 'f', -1, 64) + " GB/s", GBPerS: g, Source: src}, nil
}

// deviceLink maps a GPU name pattern to its link between GPUs of one host
// and what the name cannot tell.
type deviceLink struct {
	re   *regexp.Regexp
	link string // a name of namedLink
	note string
}

// deviceLinks are tried in order, the first match wins: PCIe cards before
// the SXM parts whose names they contain.
func deviceLinks() []deviceLink {
	pcieCard := "a PCIe card; NVLink bridges, if fitted, are not recorded in the trace (pass --link nvlink4 when they join every rank of the group)"
	return []deviceLink{
		{regexp.MustCompile(`H[12]00 NVL|H100 PCIe`), "pcie5x16", pcieCard},
		{regexp.MustCompile(`A100.*PCIE|A100.*PCIe|\bL40S?\b|\bL4\b|\bA10G?\b`), "pcie4x16", "a PCIe card"},
		{regexp.MustCompile(`\bG?B[123]00\b`), "nvlink5", ""},
		{regexp.MustCompile(`\bH[12]00\b|\bH20\b`), "nvlink4", ""},
		{regexp.MustCompile(`A100`), "nvlink3", ""},
	}
}

// p2pNote is what the trace cannot tell about how NCCL moved the data.
const p2pNote = "the trace does not record the NCCL environment: with NCCL_P2P_DISABLE=1 the data goes through host memory, then pass --link pcie5x16 (or pcie4x16)"

// devicePeak returns the link peak that the GPU name tells and what it
// cannot tell; nil with the reason when the name tells none.
func devicePeak(device string) (*LinkPeak, string) {
	if device == "" {
		return nil, "the trace names no GPU"
	}
	for _, d := range deviceLinks() {
		if d.re.MatchString(device) {
			l, _ := namedLink(d.link)
			l.Source = "device name " + device
			note := p2pNote
			if d.note != "" {
				note = d.note + "; " + p2pNote
			}
			return &l, note
		}
	}
	return nil, fmt.Sprintf("no link known for GPU %q", device)
}

// choosePeak picks the link peak: the option when given, else the GPU
// name's when every rank names the same GPU. It returns the peak (nil when
// none is known) and a note on what it assumes or why none is known.
func choosePeak(opt *LinkPeak, ranks []Rank) (*LinkPeak, string) {
	if opt != nil {
		return opt, ""
	}
	device := ""
	for i := range ranks {
		switch d := ranks[i].Device; {
		case d == "":
		case device == "":
			device = d
		case d != device:
			return nil, fmt.Sprintf("the ranks run on different GPUs (%s, %s): pass --link", device, d)
		}
	}
	p, note := devicePeak(device)
	if p == nil {
		note += ": pass --link " + strings.Join(LinkNames(), "|") + "|GBPS"
	}
	return p, note
}
