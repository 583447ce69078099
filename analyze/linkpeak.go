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
	link string // a name of namedLink; "" for a mesh
	note string
	mesh *meshLink
}

// meshLink is a fully connected mesh of point-to-point links, one to each
// peer (AMD Infinity Fabric on the 8-GPU platforms): a collective over n
// GPUs of one host uses n-1 of a GPU's links, so its peak per GPU and
// direction is n-1 links' worth, not the GPU's total.
type meshLink struct {
	name string
	// perLink is one link's peak per direction, GB/s: half AMD's "Peak
	// Infinity Fabric Link Bandwidth", which counts both directions.
	perLink float64
	peers   int // links to other GPUs of the platform (7 of 8)
	source  string
}

// peak is the mesh's peak per GPU and direction for a group of n GPUs
// (n < 2 or unknown: all peers).
func (m *meshLink) peak(n int) LinkPeak {
	links := m.peers
	if n >= 2 && n-1 < links {
		links = n - 1
	}
	g := m.perLink * float64(links)
	return LinkPeak{Name: fmt.Sprintf("%s, %d link%s", m.name, links, plural(links)), GBPerS: g}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// amdMesh is the Infinity Fabric mesh of an AMD Instinct GPU; the figures
// are AMD's product pages' (Infinity Fabric Links; Peak Infinity Fabric
// Link Bandwidth, both directions):
//
//	MI300X  128 GB/s a link  amd.com/en/products/accelerators/instinct/mi300/mi300x.html
//	MI325X  128 GB/s a link  amd.com/en/products/accelerators/instinct/mi300/mi325x.html
//	MI355X  153.6 GB/s a link  amd.com/en/products/accelerators/instinct/mi350/mi355x.html
//
// Each lists 8 links, 7 of which join the GPU to the 7 others of an
// 8-GPU platform (the 8th is for scale-out).
func amdMesh(name string, linkBoth float64, page string) *meshLink {
	return &meshLink{name: name, perLink: linkBoth / 2, peers: 7, source: page}
}

// deviceLinks are tried in order, the first match wins: PCIe cards before
// the SXM parts whose names they contain.
func deviceLinks() []deviceLink {
	pcieCard := "a PCIe card; NVLink bridges, if fitted, are not recorded in the trace (pass --link nvlink4 when they join every rank of the group)"
	meshNote := func(m *meshLink) string {
		return fmt.Sprintf("Infinity Fabric is a mesh of point-to-point links, %g GB/s per direction each (%s): a group of n GPUs uses n-1 of them", m.perLink, m.source)
	}
	mi300x := amdMesh("Infinity Fabric (MI300X)", 128, "AMD's MI300X page")
	mi325x := amdMesh("Infinity Fabric (MI325X)", 128, "AMD's MI325X page")
	mi355x := amdMesh("Infinity Fabric (MI355X)", 153.6, "AMD's MI355X page")
	return []deviceLink{
		{re: regexp.MustCompile(`\bMI300X\b`), note: meshNote(mi300x), mesh: mi300x},
		{re: regexp.MustCompile(`\bMI325X\b`), note: meshNote(mi325x), mesh: mi325x},
		{re: regexp.MustCompile(`\bMI35[05]X\b`), note: meshNote(mi355x), mesh: mi355x},
		{regexp.MustCompile(`H[12]00 NVL|H100 PCIe`), "pcie5x16", pcieCard, nil},
		{regexp.MustCompile(`A100.*PCIE|A100.*PCIe|\bL40S?\b|\bL4\b|\bA10G?\b`), "pcie4x16", "a PCIe card", nil},
		{regexp.MustCompile(`\bG?B[123]00\b`), "nvlink5", "", nil},
		{regexp.MustCompile(`\bH[12]00\b|\bH20\b`), "nvlink4", "", nil},
		{regexp.MustCompile(`A100`), "nvlink3", "", nil},
	}
}

// p2pNote is what the trace cannot tell about how NCCL moved the data.
const p2pNote = "the trace does not record the NCCL environment: with NCCL_P2P_DISABLE=1 the data goes through host memory, then pass --link pcie5x16 (or pcie4x16)"

// devicePeak returns the link peak that the GPU name tells for a group of
// n GPUs (the world size; 0 when unknown) and what it cannot tell; nil
// with the reason when the name tells none.
func devicePeak(device string, n int) (*LinkPeak, string) {
	if device == "" {
		return nil, "the trace names no GPU"
	}
	for _, d := range deviceLinks() {
		if d.re.MatchString(device) {
			l, _ := namedLink(d.link)
			if d.mesh != nil {
				l = d.mesh.peak(n)
				if n >= 2 {
					l.Name += fmt.Sprintf(" for %d GPUs", n)
				}
			}
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
	device, n := "", 0
	for i := range ranks {
		n = max(n, ranks[i].WorldSize)
		switch d := ranks[i].Device; {
		case d == "":
		case device == "":
			device = d
		case d != device:
			return nil, fmt.Sprintf("the ranks run on different GPUs (%s, %s): pass --link", device, d)
		}
	}
	p, note := devicePeak(device, n)
	if p == nil {
		note += ": pass --link " + strings.Join(LinkNames(), "|") + "|GBPS"
	}
	return p, note
}
