package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"kinetoscope/api/store"
)

// samplesMarker is created in the data directory once the samples were
// loaded, so that a deleted sample stays deleted.
const samplesMarker = ".samples-loaded"

// LoadSamples imports each entry of dir (a trace file, an archive, or a
// directory of rank files) as one run labelled source=sample, once per
// data directory. It returns the runs it created.
func (s *Server) LoadSamples(ctx context.Context, dir string) ([]*store.Run, error) {
	marker := filepath.Join(s.cfg.DataDir, samplesMarker)
	if _, err := os.Stat(marker); err == nil {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("samples: %w", err)
	}
	var runs []*store.Run
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || (!e.IsDir() && !isUploadName(e.Name())) {
			continue
		}
		run, err := s.Import(ctx, filepath.Join(dir, e.Name()), map[string]string{"source": "sample"})
		if err != nil {
			return runs, err
		}
		runs = append(runs, run)
	}
	if err := os.WriteFile(marker, []byte(dir+"\n"), 0o644); err != nil {
		return runs, fmt.Errorf("samples: %w", err)
	}
	return runs, nil
}

// isUploadName reports whether a file name looks like a trace or archive.
func isUploadName(name string) bool {
	for _, ext := range []string{".json", ".json.gz", ".tar", ".tar.gz", ".tgz", ".zip"} {
		if strings.HasSuffix(strings.ToLower(name), ext) {
			return true
		}
	}
	return false
}

// Import stores a local trace file, archive or directory of trace files as
// one run, with the same checks as an upload, and queues its analysis.
func (s *Server) Import(ctx context.Context, path string, labels map[string]string) (*store.Run, error) {
	files, err := importFiles(path)
	if err != nil {
		return nil, err
	}
	up := upload{name: strings.TrimSuffix(filepath.Base(path), ".json.gz"), labels: labels}
	return s.commit(ctx, &up, func() error {
		for _, p := range files {
			if err := s.importFile(ctx, path, p, &up); err != nil {
				return err
			}
		}
		return nil
	})
}

// ImportFiles stores local trace files as one run named name (the rank
// files of one profile, as watch found them), with the same checks as an
// upload, and queues its analysis.
func (s *Server) ImportFiles(ctx context.Context, name string, paths []string, labels map[string]string) (*store.Run, error) {
	if len(paths) == 0 {
		return nil, errors.New("import: no files")
	}
	up := upload{name: name, labels: labels}
	return s.commit(ctx, &up, func() error {
		for _, p := range paths {
			if err := s.importFile(ctx, filepath.Dir(p), p, &up); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Server) importFile(ctx context.Context, root, path string, up *upload) error {
	name := filepath.Base(path)
	if rel, err := filepath.Rel(root, path); err == nil && rel != "." {
		name = filepath.ToSlash(rel)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	if err := s.storeFile(ctx, f, name, up); err != nil {
		return fmt.Errorf("import %s: %w", path, err)
	}
	return nil
}

// importFiles lists the trace files of path: path itself, or the trace
// files below a directory.
func importFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && isUploadName(d.Name()) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", path, err)
	}
	files = preferProfilerTraces(files)
	if len(files) == 0 {
		return nil, errors.New("import " + path + ": no trace files")
	}
	sort.Strings(files)
	return files, nil
}

// preferProfilerTraces keeps only the *.pt.trace.json[.gz] files when a
// directory has any, leaving out side files such as notes in JSON.
func preferProfilerTraces(files []string) []string {
	var pt []string
	for _, f := range files {
		if strings.Contains(filepath.Base(f), ".pt.trace.json") {
			pt = append(pt, f)
		}
	}
	if len(pt) > 0 {
		return pt
	}
	return files
}
