package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"kinetoscope/analyze"
	"kinetoscope/api/web"
)

// gpuPeakParam is the parameter that holds a run's roofline against other
// GPU peaks (analyze's Options.GPUPeak: hbm=TB/s and dtype=TFLOP/s
// figures over the GPU name's, as kinetoscope analyze --gpu-peak; "" for
// the GPU name's): an upload's, the run's setting (postGPUPeak), and a
// report or chart request's, for that request only. It follows the link's
// pattern (link.go).
const gpuPeakParam = "gpu_peak"

// checkGPUPeak refuses a GPU peak value that analyze cannot read, naming
// where it was given.
func checkGPUPeak(where, peak string) (string, error) {
	peak = strings.TrimSpace(peak)
	if _, err := analyze.ParseGPUPeak(peak, nil); err != nil {
		return "", badRequest("%s: %v", where, err)
	}
	return peak, nil
}

// setGPUPeak sets the upload's GPU peak setting.
func (u *upload) setGPUPeak(peak string) (err error) {
	u.gpuPeak, err = checkGPUPeak(gpuPeakParam, peak)
	return err
}

// postGPUPeak handles POST /api/v1/runs/{id}/gpu_peak: the form or query
// field gpu_peak sets the GPU peaks the run's roofline is held against
// from then on ("" for the GPU name's); the stored report stays as
// analysed. A browser form is sent back to the run page; others get the
// run.
func (s *Server) postGPUPeak(c echo.Context) error {
	ctx, id := c.Request().Context(), c.Param("id")
	peak, err := checkGPUPeak(gpuPeakParam, c.FormValue(gpuPeakParam))
	if err != nil {
		return err
	}
	if err := s.meta.SetGPUPeak(ctx, id, peak); err != nil {
		return notFound(err)
	}
	if web.WantsHTML(c.Request()) {
		return c.Redirect(http.StatusSeeOther, "/runs/"+id+"#roofline")
	}
	run, err := s.Run(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}
