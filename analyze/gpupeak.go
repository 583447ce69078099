package analyze

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The dtype keys of GPUPeak.TFLOPS: the tensor-core (matrix) rate of each
// input type, dense (without 2:4 structured sparsity, which datasheets
// often quote at twice the rate). FP32 is the rate without TF32 (PyTorch's
// default for matmul: torch.backends.cuda.matmul.allow_tf32 is False).
const (
	PeakFP32 = "fp32"
	PeakTF32 = "tf32"
	PeakBF16 = "bf16" // also fp16's rate (GPUPeak.Rate)
	PeakFP16 = "fp16" // a work dtype only: held against PeakBF16's rate
	PeakFP8  = "fp8"
	PeakINT8 = "int8"
	PeakINT4 = "int4"
	PeakFP4  = "fp4"
)

// peakKeys are the dtype keys in the order they are written.
var peakKeys = []string{PeakFP32, PeakTF32, PeakBF16, PeakFP8, PeakINT8, PeakINT4, PeakFP4}

// GPUPeak is what one GPU can do at most: its memory bandwidth and dense
// tensor FLOP/s by input dtype, the roofs achieved rates are held against.
type GPUPeak struct {
	Name string `json:"name"` // "H200 SXM", or what --gpu-peak gave
	// HBMTBPerS is the memory bandwidth, 10^12 bytes a second (HBM, or
	// GDDR on the PCIe cards); 0 when unknown.
	HBMTBPerS float64 `json:"hbm_tb_per_s"`
	// TFLOPS is the dense tensor rate by dtype key (PeakBF16, ...), 10^12
	// operations a second; a dtype the part has no figure for is absent.
	TFLOPS map[string]float64 `json:"tflops"`
	// Source says how it was chosen: "device name NVIDIA H200" or
	// "--gpu-peak hbm=4.8TB/s".
	Source string `json:"source"`
	// Cite names the datasheet the figures are from.
	Cite string `json:"cite,omitempty"`
}

// Rate returns the dense tensor TFLOP/s for a work dtype key (FP16 at the
// BF16 figure, the same on every part of the table), 0 when unknown.
func (p *GPUPeak) Rate(key string) float64 {
	if key == PeakFP16 {
		key = PeakBF16
	}
	return p.TFLOPS[key]
}

// gpuPeakRow is one part of the peak table: the pattern its device name
// matches (and, where one name covers two memory sizes, the least memory
// it has), and its figures.
type gpuPeakRow struct {
	re     *regexp.Regexp
	minMem int64 // bytes; 0 for any
	peak   GPUPeak
}

// gpuPeakRows is the peak table, tried in order (the first match wins:
// PCIe and NVL cards before the SXM parts whose names they contain). Dense
// figures: datasheets that quote sparse rates ("with sparsity") are halved.
//
//   - A100: NVIDIA A100 Tensor Core GPU datasheet
//     (nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf):
//     FP32 19.5, TF32 156, BF16/FP16 312, INT8 624, INT4 1248 (INT4 from the
//     A100 architecture whitepaper); HBM2 1,555 GB/s (40GB), HBM2e 2,039 GB/s
//     (80GB SXM), 1,935 GB/s (80GB PCIe).
//   - H100: NVIDIA H100 Tensor Core GPU datasheet
//     (resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet):
//     SXM 3.35 TB/s, FP32 67, TF32 494.7, BF16 989.4, FP8 1,978.9, INT8
//     1,978.9; PCIe 2 TB/s, FP32 51, TF32 378, BF16 756, FP8 1,513, INT8
//     1,513; NVL 3.9 TB/s, FP32 60, TF32 417.5, BF16 835.5, FP8 1,670.5.
//   - H200: NVIDIA H200 Tensor Core GPU datasheet / product page
//     (nvidia.com/en-us/data-center/h200/): 4.8 TB/s; SXM the H100 SXM's
//     rates; NVL 835.5 BF16, 1,670.5 FP8, 417.5 TF32, 60 FP32.
//   - B200: NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx/,
//     eight GPUs, divided by 8, sparse halved): 8 TB/s, FP32 80, TF32 1,100,
//     BF16 2,250, FP8 4,500, INT8 4,500, FP4 9,000.
//   - RTX PRO 6000 Blackwell: NVIDIA RTX Blackwell GPU architecture
//     whitepaper, appendix (RTX PRO 6000 Blackwell): GDDR7 1,792 GB/s,
//     FP32 125, TF32 251.9, BF16 503.8 (FP32 accumulate), FP8 1,007.6,
//     INT8 1,007.6, FP4 2,015.2.
//   - L40S: NVIDIA L40S datasheet (resources.nvidia.com/en-us-l40s/l40s-datasheet-28413):
//     GDDR6 864 GB/s, FP32 91.6, TF32 183, BF16 362.05, FP8 733, INT8 733,
//     INT4 733.
//   - MI300X, MI325X: AMD Instinct MI300X / MI325X data sheets and product
//     pages (amd.com/en/products/accelerators/instinct/mi300/mi300x.html,
//     .../mi325x.html): 5.3 TB/s and 6 TB/s; FP32 matrix 163.4, TF32
//     653.7, BF16/FP16 1,307.4, FP8 2,614.9, INT8 2,614.9.
//   - MI355X: AMD Instinct MI355X product page
//     (amd.com/en/products/accelerators/instinct/mi350/mi355x.html): 8 TB/s,
//     FP32 matrix 157.3, BF16/FP16 2,516.6, FP8 5,033.2, INT8 5,033.2,
//     MXFP4 10,066.4 (no TF32).
//   - V100: NVIDIA V100 datasheet (images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf):
//     SXM2 900 GB/s, FP32 15.7, FP16 tensor 125 (held as bf16; V100 has
//     no BF16).
func gpuPeakRows() []gpuPeakRow {
	type rates = map[string]float64
	const gib = 1 << 30
	a100 := "NVIDIA A100 datasheet"
	h100 := "NVIDIA H100 datasheet"
	h200 := "NVIDIA H200 datasheet"
	mi300 := "AMD Instinct MI300X/MI325X data sheets"
	row := func(re string, minMem int64, name string, hbm float64, cite string, rates map[string]float64) gpuPeakRow {
		return gpuPeakRow{re: regexp.MustCompile(re), minMem: minMem,
			peak: GPUPeak{Name: name, HBMTBPerS: hbm, TFLOPS: rates, Cite: cite}}
	}
	a100Rates := rates{PeakFP32: 19.5, PeakTF32: 156, PeakBF16: 312, PeakINT8: 624, PeakINT4: 1248}
	h100SXM := rates{PeakFP32: 67, PeakTF32: 494.7, PeakBF16: 989.4, PeakFP8: 1978.9, PeakINT8: 1978.9}
	nvl := rates{PeakFP32: 60, PeakTF32: 417.5, PeakBF16: 835.5, PeakFP8: 1670.5, PeakINT8: 1670.5}
	mi300Rates := rates{PeakFP32: 163.4, PeakTF32: 653.7, PeakBF16: 1307.4, PeakFP8: 2614.9, PeakINT8: 2614.9}
	return []gpuPeakRow{
		row(`A100.*PCI[eE].*80GB|A100.*80GB.*PCI[eE]`, 0, "A100 80GB PCIe", 1.935, a100, a100Rates),
		row(`A100.*PCI[eE]`, 60*gib, "A100 80GB PCIe", 1.935, a100, a100Rates),
		row(`A100.*PCI[eE]`, 0, "A100 40GB PCIe", 1.555, a100, a100Rates),
		row(`A100.*80GB`, 0, "A100 80GB SXM", 2.039, a100, a100Rates),
		row(`A100`, 60*gib, "A100 80GB SXM", 2.039, a100, a100Rates),
		row(`A100`, 0, "A100 40GB SXM", 1.555, a100, a100Rates),
		row(`H100 PCIe`, 0, "H100 PCIe", 2.0, h100, rates{PeakFP32: 51, PeakTF32: 378, PeakBF16: 756, PeakFP8: 1513, PeakINT8: 1513}),
		row(`H100 NVL`, 0, "H100 NVL", 3.9, h100, nvl),
		row(`H100`, 0, "H100 SXM", 3.35, h100, h100SXM),
		row(`H200 NVL`, 0, "H200 NVL", 4.8, h200, nvl),
		row(`H200`, 0, "H200 SXM", 4.8, h200, h100SXM),
		row(`\bG?B200\b`, 0, "B200", 8.0, "NVIDIA HGX B200 specifications",
			rates{PeakFP32: 80, PeakTF32: 1100, PeakBF16: 2250, PeakFP8: 4500, PeakINT8: 4500, PeakFP4: 9000}),
		row(`RTX PRO 6000`, 0, "RTX PRO 6000 Blackwell", 1.792, "NVIDIA RTX Blackwell architecture whitepaper",
			rates{PeakFP32: 125, PeakTF32: 251.9, PeakBF16: 503.8, PeakFP8: 1007.6, PeakINT8: 1007.6, PeakFP4: 2015.2}),
		row(`\bL40S\b`, 0, "L40S", 0.864, "NVIDIA L40S datasheet",
			rates{PeakFP32: 91.6, PeakTF32: 183, PeakBF16: 362.05, PeakFP8: 733, PeakINT8: 733, PeakINT4: 733}),
		row(`\bMI300X\b`, 0, "MI300X", 5.3, mi300, mi300Rates),
		row(`\bMI325X\b`, 0, "MI325X", 6.0, mi300, mi300Rates),
		row(`\bMI355X\b`, 0, "MI355X", 8.0, "AMD Instinct MI355X product page",
			rates{PeakFP32: 157.3, PeakBF16: 2516.6, PeakFP8: 5033.2, PeakINT8: 5033.2, PeakFP4: 10066.4}),
		row(`V100.*PCI[eE]`, 0, "V100 PCIe", 0.9, "NVIDIA V100 datasheet", rates{PeakFP32: 14, PeakBF16: 112}),
		row(`V100`, 0, "V100 SXM2", 0.9, "NVIDIA V100 datasheet", rates{PeakFP32: 15.7, PeakBF16: 125}),
	}
}

// deviceGPUPeak returns the peak the table gives for a GPU of this name
// and memory (bytes, 0 when unknown), or nil.
func deviceGPUPeak(device string, mem int64) *GPUPeak {
	if device == "" {
		return nil
	}
	for _, r := range gpuPeakRows() {
		if r.re.MatchString(device) && mem >= r.minMem {
			p := r.peak
			p.Source = "device name " + device
			return &p
		}
	}
	return nil
}

// ParseGPUPeak reads an Options.GPUPeak value: comma-separated key=value
// figures, hbm in TB/s ("hbm=4.8TB/s" or "hbm=4.8") and any dtype key of
// GPUPeak.TFLOPS in TFLOP/s ("bf16=989TFLOPs", "fp8=1979"), optionally a
// name ("name=H200 at 1.5 GHz"). Figures not given are kept from base (the
// device's peak; nil for none). An empty value gives base.
func ParseGPUPeak(s string, base *GPUPeak) (*GPUPeak, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return base, nil
	}
	p := GPUPeak{Name: "--gpu-peak", TFLOPS: map[string]float64{}}
	if base != nil {
		p.Name, p.HBMTBPerS, p.Cite = base.Name+" (--gpu-peak)", base.HBMTBPerS, base.Cite
		for k, v := range base.TFLOPS {
			p.TFLOPS[k] = v
		}
	}
	p.Source = "--gpu-peak " + s
	for _, f := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(f), "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok {
			return nil, fmt.Errorf("gpu peak %q: %q is not key=value", s, f)
		}
		if k == "name" {
			p.Name = strings.TrimSpace(v)
			continue
		}
		unit := "tflops"
		if k == "hbm" {
			unit = "tb/s"
		} else if k == "fp16" {
			k = PeakBF16
		}
		if k != "hbm" && !slices.Contains(peakKeys, k) {
			return nil, fmt.Errorf("gpu peak %q: unknown key %q: want hbm, name or one of %s", s, k, strings.Join(peakKeys, ", "))
		}
		num := strings.TrimSpace(strings.TrimSuffix(strings.ToLower(strings.TrimSpace(v)), unit))
		g, err := strconv.ParseFloat(num, 64)
		if err != nil || !(g > 0) || g > 1e6 {
			return nil, fmt.Errorf("gpu peak %q: %s=%q: want a positive number of %s", s, k, v, unitName(unit))
		}
		if k == "hbm" {
			p.HBMTBPerS = g
		} else {
			p.TFLOPS[k] = g
		}
	}
	return &p, nil
}

// unitName writes a unit as the flag takes it.
func unitName(u string) string {
	if u == "tb/s" {
		return "TB/s"
	}
	return "TFLOP/s"
}

// PeakKeys returns the dtype keys --gpu-peak takes besides hbm and name.
func PeakKeys() []string { return slices.Clone(peakKeys) }
