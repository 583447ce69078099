package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/labstack/echo/v4"

	"kinetoscope/analyze"
)

// gpuPeakParam is the parameter of a report or chart request that holds
// the run's roofline against other GPU peaks for that request only
// (analyze's Options.GPUPeak: hbm=TB/s and dtype=TFLOP/s figures over the
// GPU name's, as kinetoscope analyze --gpu-peak).
const gpuPeakParam = "gpu_peak"

// requestReport returns a run's report held against the request's
// ?link= (linkedReport) and ?gpu_peak= (analyze.WithGPUPeak), and a
// digest of the stored report and both, for the chart cache.
func (s *Server) requestReport(ctx context.Context, c echo.Context) (*analyze.Report, string, error) {
	rep, hash, err := s.linkedReport(ctx, c.Param("id"), c.QueryParam(linkParam))
	spec := strings.TrimSpace(c.QueryParam(gpuPeakParam))
	if err != nil || spec == "" {
		return rep, hash, err
	}
	if rep, err = analyze.WithGPUPeak(rep, spec); err != nil {
		return nil, "", badRequest("?%s=: %v", gpuPeakParam, err)
	}
	h := sha256.Sum256([]byte(hash + "\x00gpu_peak=" + spec))
	return rep, hex.EncodeToString(h[:8]), nil
}
