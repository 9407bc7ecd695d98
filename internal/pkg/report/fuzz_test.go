package report

import (
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// storedRows returns every row the Reporter holds, in order.
func storedRows(t *testing.T, r *Reporter) []string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	rows, err := r.store.read(int(r.store.end-r.store.base)+1, 1<<62)
	if err != nil {
		t.Fatalf("read stored rows: %v", err)
	}
	out := make([]string, len(rows))
	for i, row := range rows {
		out[i] = row.s
	}
	return out
}

// FuzzWriterMasks writes a text containing a secret in three pieces, split
// at arbitrary points, through a Writer with a tiny line limit, and checks
// that no row contains the secret and every row is valid UTF-8.
func FuzzWriterMasks(f *testing.F) {
	f.Add("pass=", "hunter2", " end\nnext\n", uint(3), uint(9), uint8(16))
	f.Add("", "s3cr3t", "", uint(0), uint(1), uint8(0))
	f.Add("a\xffb", "tok-123", "\r\n\xc3", uint(2), uint(5), uint8(4))
	f.Add("xxxxxxxxxxxxxxxx", "secret-value", "yyyyyyyyyyyyyyyyyyyy", uint(10), uint(20), uint8(8))
	f.Add("aaa", "aaaa", "aaaaa\n", uint(1), uint(7), uint8(3))
	f.Fuzz(func(t *testing.T, before, secret, after string, cut1, cut2 uint, limit uint8) {
		secret = strings.TrimSpace(secret)
		if len(secret) < MinMaskLen || strings.ContainsAny(secret, "*\n") ||
			!utf8.ValidString(secret) || strings.ContainsRune(secret, utf8.RuneError) {
			t.Skip("not a maskable secret")
		}
		r := New(newFakeForge(), 1, 1, Options{Masks: []string{secret}})
		r.lineLimit = int(limit)
		data := before + secret + after + secret
		a := min(int(cut1), len(data))
		b := min(max(int(cut2), a), len(data))
		w := r.Writer(0)
		for _, p := range []string{data[:a], data[a:b], data[b:]} {
			if n, err := io.WriteString(w, p); n != len(p) || err != nil {
				t.Fatalf("Write = %d, %v, want %d, nil", n, err, len(p))
			}
		}
		r.StepEnd(0, success)
		for _, row := range storedRows(t, r) {
			if strings.Contains(row, secret) {
				t.Fatalf("row %q contains the secret %q", row, secret)
			}
			if !utf8.ValidString(row) {
				t.Fatalf("row %q is not valid UTF-8", row)
			}
			if strings.Contains(row, "\n") {
				t.Fatalf("row %q contains a newline", row)
			}
		}
	})
}

// FuzzWriterLines checks that, without masks and long lines, the rows are
// exactly the lines of the input whatever the write boundaries.
func FuzzWriterLines(f *testing.F) {
	f.Add("one\ntwo\r\nthree", uint(2), uint(6))
	f.Add("\n\n\n", uint(0), uint(1))
	f.Fuzz(func(t *testing.T, data string, cut1, cut2 uint) {
		if !utf8.ValidString(data) {
			t.Skip("rows are valid UTF-8 by design; compared separately")
		}
		r := New(newFakeForge(), 1, 1, Options{})
		a := min(int(cut1), len(data))
		b := min(max(int(cut2), a), len(data))
		w := r.Writer(0)
		for _, p := range []string{data[:a], data[a:b], data[b:]} {
			io.WriteString(w, p)
		}
		r.StepEnd(0, success)
		var want []string
		if data != "" {
			want = strings.Split(strings.TrimSuffix(data, "\n"), "\n")
			for i, l := range want {
				want[i] = strings.TrimSuffix(l, "\r")
			}
		}
		if got := storedRows(t, r); !slices.Equal(got, want) {
			t.Fatalf("rows = %q, want %q", got, want)
		}
	})
}

// FuzzRowStore drives the spill store with a random sequence of appends and
// acknowledgements against a reference slice.
func FuzzRowStore(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 0, 0, 3, 9, 0}, uint8(2), uint16(0))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 200}, uint8(1), uint16(0))
	f.Add([]byte{30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 205, 30, 30, 30, 210, 30}, uint8(1), uint16(100))
	f.Fuzz(func(t *testing.T, ops []byte, memRows uint8, diskMax uint16) {
		// diskMax 0: no cap on the spill file.
		s := newRowStore(t.TempDir(), "fuzz-*.log", int(memRows%16)+1, 64, int64(diskMax%2000))
		s.compactAt = int64(memRows % 7 * 40)
		defer s.close()
		var ref []row
		var base int64
		next := 0
		for _, op := range ops {
			switch {
			case op < 200: // append a row of op bytes
				r := row{t: time.Unix(0, int64(next)*1e6), s: strings.Repeat(string(rune('a'+next%26)), int(op%40))}
				next++
				err := s.append(r)
				switch {
				case errors.Is(err, errFull):
					continue // refused: the buffer is full
				case err != nil && diskMax%2000 == 0:
					t.Fatalf("append without a disk cap: %v", err)
				}
				ref = append(ref, r)
			default: // acknowledge some rows
				k := min(int64(op-199), int64(len(ref)))
				// read before dropping, as the sender does
				got, err := s.read(int(k), 1<<30)
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				for i := range got {
					if got[i].s != ref[i].s || !got[i].t.Equal(ref[i].t) {
						t.Fatalf("row %d = %+v, want %+v", base+int64(i), got[i], ref[i])
					}
				}
				if err := s.drop(base + k); err != nil {
					t.Fatalf("drop: %v", err)
				}
				ref = ref[k:]
				base += k
			}
			if s.diskMax > 0 && s.writeOff > s.diskMax {
				t.Fatalf("spill file holds %d bytes, cap %d", s.writeOff, s.diskMax)
			}
			if len(s.mem) > 2*(int(memRows%16)+1) || s.memSize > 2*64 {
				t.Fatalf("%d rows, %d bytes in memory; hard bound %d rows, %d bytes", len(s.mem), s.memSize, 2*(memRows%16+1), 2*64)
			}
			if len(s.mem) > int(memRows%16)+1 && !s.spillFailed {
				t.Fatalf("%d rows in memory, bound %d", len(s.mem), memRows%16+1)
			}
			if s.f != nil && s.readOff > 0 && s.readOff >= s.compactAt && 2*s.readOff >= s.writeOff {
				t.Fatalf("spill file not compacted: %d dead bytes of %d, threshold %d", s.readOff, s.writeOff, s.compactAt)
			}
			if s.f != nil {
				if fi, err := s.f.Stat(); err != nil || fi.Size() != s.writeOff {
					t.Fatalf("spill file size = %v (%v), want %d", fi.Size(), err, s.writeOff)
				}
			}
		}
		got, err := s.read(len(ref)+1, 1<<30)
		if err != nil {
			t.Fatalf("final read: %v", err)
		}
		if len(got) != len(ref) {
			t.Fatalf("store holds %d rows, want %d", len(got), len(ref))
		}
		for i := range got {
			if got[i].s != ref[i].s {
				t.Fatalf("row %d = %q, want %q", i, got[i].s, ref[i].s)
			}
		}
	})
}

// FuzzOutboxFile: a damaged file in the outbox is never a panic: it is
// refused for good and removed, so it cannot block the reports behind it.
func FuzzOutboxFile(f *testing.F) {
	f.Add([]byte(outboxMagic))
	f.Add([]byte(outboxMagic + "\x05abc"))
	f.Add([]byte("nonsense"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		ob, err := OpenOutbox(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(ob.path(1), data, 0o600); err != nil {
			t.Fatal(err)
		}
		left, err := ob.DeliverAll(t.Context(), newFakeForge())
		if err != nil || left != 0 {
			// A file the fake forge takes is delivered; anything else is
			// dropped. Neither leaves it waiting.
			t.Fatalf("DeliverAll = %d, %v; want 0, nil", left, err)
		}
	})
}
