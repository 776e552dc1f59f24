package replayer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/duroxide-go/cdb/duroxide"
)

// ExportFormat is the format value of the export files this package
// writes and reads (see the package documentation).
const ExportFormat = "duroxide-history-export/v1"

// ErrExportFormat: the file is not an export of ExportFormat.
var ErrExportFormat = errors.New("replayer: not a " + ExportFormat + " export")

// exportFile is the export's JSON shape.
type exportFile struct {
	Format     string            `json:"format"`
	Executions []exportExecution `json:"executions"`
}

// exportExecution is Execution with its KV snapshot spelled out.
type exportExecution struct {
	Execution
	KVSnapshot map[string]exportKVEntry `json:"kv_snapshot,omitempty"`
}

type exportKVEntry struct {
	Value           string `json:"value"`
	LastUpdatedAtMs uint64 `json:"last_updated_at_ms"`
}

// Export writes every execution src yields to w as one ExportFormat JSON
// document; events keep duroxide's byte-compatible event JSON.
func Export(ctx context.Context, w io.Writer, src Source) error {
	out := exportFile{Format: ExportFormat, Executions: []exportExecution{}}
	err := src.Executions(ctx, func(ex Execution) error {
		e := exportExecution{Execution: ex}
		if ex.Events == nil {
			e.Events = []duroxide.Event{}
		}
		for k, v := range ex.KVSnapshot {
			if e.KVSnapshot == nil {
				e.KVSnapshot = map[string]exportKVEntry{}
			}
			e.KVSnapshot[k] = exportKVEntry{Value: v.Value, LastUpdatedAtMs: v.LastUpdatedAtMs}
		}
		out.Executions = append(out.Executions, e)
		return nil
	})
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("replayer: writing export: %w", err)
	}
	return nil
}

// ExportToFile writes Export's document to path (created or truncated).
func ExportToFile(ctx context.Context, path string, src Source) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("replayer: %w", err)
	}
	if err := Export(ctx, f, src); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("replayer: %w", err)
	}
	return nil
}

// FromExport reads an ExportFormat document from r, once, when the
// executions are first asked for.
func FromExport(r io.Reader) Source {
	return &exportSource{open: func() (io.ReadCloser, error) { return io.NopCloser(r), nil }}
}

// FromExportFile reads the ExportFormat document at path.
func FromExportFile(path string) Source {
	return &exportSource{open: func() (io.ReadCloser, error) { return os.Open(path) }}
}

type exportSource struct {
	open func() (io.ReadCloser, error)
}

// Executions decodes the document and yields its executions in order.
func (s *exportSource) Executions(ctx context.Context, fn func(Execution) error) error {
	r, err := s.open()
	if err != nil {
		return fmt.Errorf("replayer: %w", err)
	}
	defer r.Close()
	var doc exportFile
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return fmt.Errorf("replayer: reading export: %w", err)
	}
	if doc.Format != ExportFormat {
		return fmt.Errorf("%w (format %q)", ErrExportFormat, doc.Format)
	}
	for _, e := range doc.Executions {
		if err := ctx.Err(); err != nil {
			return err
		}
		ex := e.Execution
		for k, v := range e.KVSnapshot {
			if ex.KVSnapshot == nil {
				ex.KVSnapshot = map[string]duroxide.KVEntry{}
			}
			ex.KVSnapshot[k] = duroxide.KVEntry{Value: v.Value, LastUpdatedAtMs: v.LastUpdatedAtMs}
		}
		if err := fn(ex); err != nil {
			return err
		}
	}
	return nil
}
