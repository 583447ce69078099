package api

import (
	"kinetoscope/analyze"
	"kinetoscope/api/store"
)

// gpuPeakParam is the parameter that holds a run's roofline against other
// GPU peaks (analyze's Options.GPUPeak: hbm=TB/s and dtype=TFLOP/s
// figures over the GPU name's, as kinetoscope analyze --gpu-peak; "" for
// the GPU name's): an upload's, the run's setting (gpuPeakSetting), and a
// report or chart request's, for that request only. It follows the link's
// pattern (link.go).
const gpuPeakParam = "gpu_peak"

// checkGPUPeak refuses a GPU peak value that analyze cannot read, naming
// where it was given.
func checkGPUPeak(where, peak string) (string, error) {
	return checkSetting(where, peak, func(v string) error { _, err := analyze.ParseGPUPeak(v, nil); return err })
}

// setGPUPeak sets the upload's GPU peak setting.
func (u *upload) setGPUPeak(peak string) (err error) {
	u.gpuPeak, err = checkGPUPeak(gpuPeakParam, peak)
	return err
}

// gpuPeakSetting: the GPU peaks a run's roofline is held against ("" for
// the GPU name's), set by POST /api/v1/runs/{id}/gpu_peak.
var gpuPeakSetting = runSetting{param: gpuPeakParam, check: checkGPUPeak, store: store.Meta.SetGPUPeak, section: "roofline"}
