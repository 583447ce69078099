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
	"kinetoscope/api/store"
	"kinetoscope/api/web"
)

// linkParam is the parameter that names the link between the GPUs a
// run's collective bandwidth is held against (analyze's Options.Link:
// nvlink4, pcie5x16, a GB/s figure; "" for the GPU name's): an upload's,
// the run's setting (linkSetting), and a report or chart request's, for that
// request only.
const linkParam = "link"

// checkLink refuses a link value that analyze cannot read, naming where
// it was given.
func checkLink(where, link string) (string, error) {
	return checkSetting(where, link, func(v string) error { _, err := analyze.ParseLink(v); return err })
}

// checkSetting returns a run setting's value, trimmed, or a bad request
// naming where it was given when parse refuses it: the one check behind
// each setting's (checkLink, checkGPUPeak).
func checkSetting(where, v string, parse func(string) error) (string, error) {
	v = strings.TrimSpace(v)
	if err := parse(v); err != nil {
		return "", badRequest("%s: %v", where, err)
	}
	return v, nil
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

// runSetting is a setting of a run that its stored report is held against
// when served, changed by POST /api/v1/runs/{id}/{param}: the link
// (linkSetting) and the GPU peaks (gpuPeakSetting). The report stays as
// analysed; the setting applies from then on.
type runSetting struct {
	param string
	// check refuses a value analyze cannot read, naming where it was given.
	check func(where, value string) (string, error)
	// store records the value as the run's setting.
	store func(m store.Meta, ctx context.Context, id, value string) error
	// section is the run page's section that shows it.
	section string
}

// linkSetting: the link a run's bandwidth is held against ("" for the GPU
// name's).
var linkSetting = runSetting{param: linkParam, check: checkLink, store: store.Meta.SetLink, section: "bandwidth"}

// postSetting handles POST /api/v1/runs/{id}/{param} for one setting: the
// form or query field of that name sets it. A browser form is sent back to
// the run page's section; others get the run.
func (s *Server) postSetting(rs runSetting) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, id := c.Request().Context(), c.Param("id")
		value, err := rs.check(rs.param, c.FormValue(rs.param))
		if err != nil {
			return err
		}
		if err := rs.store(s.meta, ctx, id, value); err != nil {
			return notFound(err)
		}
		if web.WantsHTML(c.Request()) {
			return c.Redirect(http.StatusSeeOther, "/runs/"+id+"#"+rs.section)
		}
		run, err := s.Run(ctx, id)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, run)
	}
}
