package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"kinetoscope/analyze"
	"kinetoscope/api/web"
)

// linkParam is the parameter that names the link between the GPUs a
// run's collective bandwidth is held against (analyze's Options.Link:
// nvlink4, pcie5x16, a GB/s figure; "" for the GPU name's): an upload's,
// the run's setting (postLink), and a report or chart request's, for that
// request only.
const linkParam = "link"

// checkLink refuses a link value that analyze cannot read, naming where
// it was given.
func checkLink(where, link string) (string, error) {
	link = strings.TrimSpace(link)
	if _, err := analyze.ParseLink(link); err != nil {
		return "", badRequest("%s: %v", where, err)
	}
	return link, nil
}

// setLink sets the upload's link setting.
func (u *upload) setLink(link string) (err error) {
	u.link, err = checkLink(linkParam, link)
	return err
}

// linkedReport returns a run's report held against link (a request's
// ?link=), else against the run's link setting, else against the GPU
// name's (analyze.WithLink); its roofline likewise against peak (a
// request's ?gpu_peak=), else the run's GPU peak setting, else the GPU
// name's (analyze.WithGPUPeak); and a digest of the stored report and
// both, for the chart cache.
func (s *Server) linkedReport(ctx context.Context, id, link, peak string) (*analyze.Report, string, error) {
	link, err := checkLink("?"+linkParam+"=", link)
	if err != nil {
		return nil, "", err
	}
	run, js, err := s.storedReport(ctx, id)
	if err != nil {
		return nil, "", err
	}
	var r analyze.Report
	if err := json.Unmarshal(js, &r); err != nil {
		return nil, "", fmt.Errorf("decode report of run %s: %w", id, err)
	}
	source := "?" + linkParam + "=" + link
	if link == "" {
		link, source = run.Link, "the run's link setting "+run.Link
	}
	rep, err := analyze.WithLink(&r, link)
	if err != nil {
		return nil, "", fmt.Errorf("run %s: %w", id, err)
	}
	if b := rep.Bandwidth; link != "" && b != nil && b.Peak != nil {
		b.Peak.Source = source // WithLink's own peak, not r's
	}
	peak, err = checkGPUPeak("?"+gpuPeakParam+"=", peak)
	if err != nil {
		return nil, "", err
	}
	peakSource := "?" + gpuPeakParam + "=" + peak
	if peak == "" {
		peak, peakSource = run.GPUPeak, "the run's GPU peak setting "+run.GPUPeak
	}
	if rep, err = analyze.WithGPUPeak(rep, peak); err != nil {
		return nil, "", fmt.Errorf("run %s: %w", id, err)
	}
	if rf := rep.Roofline; peak != "" && rf != nil && rf.Peak != nil {
		rf.Peak.Source = peakSource // WithGPUPeak's own peak, not r's
	}
	h := sha256.New()
	h.Write(js)
	fmt.Fprintf(h, "\x00link=%s\x00gpu_peak=%s", link, peak)
	return rep, hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// postLink handles POST /api/v1/runs/{id}/link: the form or query field
// link sets the link the run's bandwidth is held against from then on
// ("" for the GPU name's); the stored report stays as analysed. A browser
// form is sent back to the run page; others get the run.
func (s *Server) postLink(c echo.Context) error {
	ctx, id := c.Request().Context(), c.Param("id")
	link, err := checkLink(linkParam, c.FormValue(linkParam))
	if err != nil {
		return err
	}
	if err := s.meta.SetLink(ctx, id, link); err != nil {
		return notFound(err)
	}
	if web.WantsHTML(c.Request()) {
		return c.Redirect(http.StatusSeeOther, "/runs/"+id+"#bandwidth")
	}
	run, err := s.Run(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}
