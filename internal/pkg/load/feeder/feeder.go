package feeder

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/forgeload/forgeload/internal/pkg/load/vars"
)

// MaxSize is the largest feeder file read (64 MiB).
const MaxSize = 64 << 20

// Rows are a feeder's records. Create them with [Load] or [Parse]; they are
// safe for concurrent use.
type Rows struct {
	name    string
	cols    map[string]int
	rows    [][]string
	has     [][]bool // per JSON row, which columns it sets
	recs    []Row    // rows as Lookups, built once so Next allocates nothing
	next    atomic.Uint64
	recycle bool
}

// Row is one record; it implements vars.Lookup.
type Row struct {
	cols map[string]int
	vals []string
	has  []bool // JSON records may lack fields; nil means all present
}

// Lookup returns the value of the column name.
func (r *Row) Lookup(name string) (string, bool) {
	i, ok := r.cols[name]
	if !ok || i >= len(r.vals) || (r.has != nil && !r.has[i]) {
		return "", false
	}
	return r.vals[i], true
}

// Parse reads feeder data b of type typ (csv or json); name labels errors.
func Parse(name, typ string, b []byte) (*Rows, error) {
	var r *Rows
	var err error
	switch strings.ToLower(typ) {
	case "csv":
		r, err = parseCSV(name, b)
	case "json":
		r, err = parseJSON(name, b)
	default:
		return nil, fmt.Errorf("feeder %s: type %q is unknown: set feeder.type to csv or json", name, typ)
	}
	if err != nil {
		return nil, err
	}
	if len(r.rows) == 0 {
		return nil, fmt.Errorf("feeder %s has no rows: add at least one record", name)
	}
	r.recs = make([]Row, len(r.rows))
	for i, vals := range r.rows {
		r.recs[i] = Row{cols: r.cols, vals: vals}
		if r.has != nil {
			r.recs[i].has = r.has[i]
		}
	}
	return r, nil
}

func parseCSV(name string, b []byte) (*Rows, error) {
	cr := csv.NewReader(bytes.NewReader(b))
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = false
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("feeder %s is empty: the first line names the columns (e.g. user_id,email)", name)
		}
		return nil, fmt.Errorf("feeder %s: header: %w", name, err)
	}
	r := &Rows{name: name, cols: map[string]int{}}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, fmt.Errorf("feeder %s: column %d of the header has no name", name, i+1)
		}
		if _, dup := r.cols[h]; dup {
			return nil, fmt.Errorf("feeder %s: column %q appears twice in the header", name, h)
		}
		r.cols[h] = i
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("feeder %s: %w: every row needs as many fields as the header (%d)", name, err, len(header))
		}
		r.rows = append(r.rows, rec)
	}
	return r, nil
}

func parseJSON(name string, b []byte) (*Rows, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var recs []map[string]any
	if err := dec.Decode(&recs); err != nil {
		return nil, fmt.Errorf("feeder %s: %w: write a JSON array of objects, e.g. [{\"user_id\": \"101\"}]", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("feeder %s: data after the JSON array: keep one array", name)
	}
	r := &Rows{name: name, cols: map[string]int{}}
	for i, rec := range recs {
		if len(rec) == 0 {
			return nil, fmt.Errorf("feeder %s: record %d is empty (or null): give it fields", name, i+1)
		}
		row := make([]string, len(r.cols), len(r.cols)+len(rec))
		has := make([]bool, len(r.cols), len(r.cols)+len(rec))
		for k, v := range rec {
			j, ok := r.cols[k]
			if !ok {
				j = len(r.cols)
				r.cols[k] = j
			}
			for len(row) <= j {
				row, has = append(row, ""), append(has, false)
			}
			s, err := scalar(v)
			if err != nil {
				return nil, fmt.Errorf("feeder %s: record %d, field %q: %w", name, i+1, k, err)
			}
			row[j], has[j] = s, true
		}
		r.rows = append(r.rows, row)
		r.has = append(r.has, has)
	}
	return r, nil
}

// scalar formats a JSON value as its text: strings as they are, numbers as
// written, booleans as true/false; null, objects and arrays are refused.
func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	}
	return "", fmt.Errorf("a %T is not a value for a placeholder: use a string, number or boolean", v)
}

// SetRecycle makes the rows start over when used up instead of failing.
func (r *Rows) SetRecycle(on bool) { r.recycle = on }

// Len returns the number of rows.
func (r *Rows) Len() int { return len(r.rows) }

// Next returns the next row in file order. It does not block.
func (r *Rows) Next(context.Context) (vars.Row, error) {
	i := r.next.Add(1) - 1
	n := uint64(len(r.rows))
	if i >= n {
		if !r.recycle {
			return nil, fmt.Errorf("%w: %s has %d rows and all were used; the run needs one row per request: add rows, lower total or duration, or set feeder.recycle: true",
				vars.ErrExhausted, r.name, n)
		}
		i %= n
	}
	return &r.recs[i], nil
}
