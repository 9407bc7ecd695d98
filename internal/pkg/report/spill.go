package report

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// row is one log line as the reporter keeps it: the time it was written and its
// final (masked, valid UTF-8) content.
type row struct {
	t time.Time
	s string
}

// rowCost is the memory a row is charged with against the byte bound.
func rowCost(r row) int { return len(r.s) + 32 }

// errFull is wrapped by rowStore.append when a row was refused: memory is at
// its hard bound (twice the soft one) and the spill file cannot take more
// (it is at its size cap, or the disk refuses writes).
var errFull = errors.New("log buffer full")

// rowStore holds the task's unacknowledged log rows in order. Rows
// [base, base+diskRows) live in a spill file; rows [base+diskRows, end) live in
// memory. When memory grows past its row or byte bound, the oldest in-memory
// rows are appended to the spill file, so order is kept and memory stays
// bounded. The spill file never grows past diskMax bytes; when it cannot
// take more, memory may grow to twice its bounds, and beyond that rows are
// refused (errFull) until acknowledged rows free room. A rowStore is not
// safe for concurrent use; the Reporter guards it.
type rowStore struct {
	dir      string
	pattern  string
	memRows  int
	memBytes int
	diskMax  int64

	base int64 // absolute index of the first stored row
	end  int64 // absolute index one past the last stored row

	f        *os.File
	path     string
	diskRows int64
	readOff  int64 // byte offset of row base in f
	writeOff int64 // byte offset one past the last spilled row

	mem     []row
	memSize int

	compactAt   int64 // compact the file once this many dead bytes lead it
	spillFailed bool  // the last spill failed; retry at retryRows/retryBytes
	retryRows   int
	retryBytes  int
	freed       bool // rows were dropped since the last refused spill
	encBuf      []byte
}

func newRowStore(dir, pattern string, memRows, memBytes int, diskMax int64) *rowStore {
	return &rowStore{dir: dir, pattern: pattern, memRows: memRows, memBytes: memBytes, diskMax: diskMax, compactAt: 16 << 20}
}

// append stores r as row number s.end. If spilling to disk fails, the rows
// stay in memory (up to twice the memory bounds) and the error is returned so
// the caller can report it. At the hard memory bound, the row is not stored
// and the error wraps errFull.
func (s *rowStore) append(r row) error {
	if len(s.mem) > 0 && (len(s.mem) >= 2*s.memRows || s.memSize+rowCost(r) > 2*s.memBytes) {
		// Try the disk again only once acknowledged rows freed room, so a
		// full disk costs one attempt per ack, not one per row.
		if !s.freed {
			return errFull
		}
		s.freed = false
		if err := s.spill(); err != nil {
			return fmt.Errorf("%w: %w", errFull, err)
		}
	}
	return s.appendAlways(r)
}

// appendAlways is append without the hard memory bound, for the one row
// that says how many were refused.
func (s *rowStore) appendAlways(r row) error {
	s.mem = append(s.mem, r)
	s.memSize += rowCost(r)
	s.end++
	if len(s.mem) <= s.memRows && s.memSize <= s.memBytes {
		return nil
	}
	if s.spillFailed && len(s.mem) < s.retryRows && s.memSize < s.retryBytes {
		return nil
	}
	if err := s.spill(); err != nil {
		// Keep the rows in memory, and try again only once memory has
		// grown by half again, so a full disk costs a few attempts, not one
		// per row.
		s.spillFailed = true
		s.retryRows, s.retryBytes = len(s.mem)+max(1, len(s.mem)/2), s.memSize+max(1, s.memSize/2)
		return err
	}
	s.spillFailed = false
	return nil
}

// spill moves the oldest in-memory rows to the spill file, keeping the newest
// half of the row bound in memory.
func (s *rowStore) spill() error {
	// Keep the newest rows that fit in half of each bound; spill the rest.
	i, keptBytes := len(s.mem), 0
	for i > 0 && len(s.mem)-i < s.memRows/2 {
		c := rowCost(s.mem[i-1])
		if keptBytes+c > s.memBytes/2 {
			break
		}
		keptBytes += c
		i--
	}
	n := i
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, s.pattern)
		if err != nil {
			return fmt.Errorf("create log spill file in %q: %w (set a writable SpillDir)", s.dir, err)
		}
		s.f, s.path = f, f.Name()
		// Unlink at once where the OS allows it, so a crash leaves nothing behind.
		if os.Remove(s.path) == nil {
			s.path = ""
		}
	}
	buf := s.encBuf[:0]
	for _, r := range s.mem[:n] {
		buf = binary.AppendUvarint(buf, uint64(len(r.s)))
		buf = binary.AppendVarint(buf, r.t.UnixNano())
		buf = append(buf, r.s...)
	}
	if s.diskMax > 0 && s.writeOff+int64(len(buf)) > s.diskMax && s.readOff > 0 && s.readOff >= s.writeOff-s.readOff {
		if err := s.compact(); err != nil {
			return err
		}
	}
	if s.diskMax > 0 && s.writeOff+int64(len(buf)) > s.diskMax {
		return fmt.Errorf("the log spill file would grow past its cap of %s", sizeText(s.diskMax))
	}
	if _, err := s.f.WriteAt(buf, s.writeOff); err != nil {
		return fmt.Errorf("write log spill file: %w (free disk space in SpillDir)", err)
	}
	if cap(buf) <= 1<<20 {
		s.encBuf = buf
	}
	s.writeOff += int64(len(buf))
	s.diskRows += int64(n)
	for _, r := range s.mem[:n] {
		s.memSize -= rowCost(r)
	}
	clear(s.mem[:n])
	s.mem = s.mem[n:]
	if len(s.mem) == 0 {
		s.mem = nil
	}
	return nil
}

// read returns up to max rows starting at row base, stopping before the
// encoded contents would exceed maxBytes (but always returning at least one
// row when any is stored).
func (s *rowStore) read(max, maxBytes int) ([]row, error) {
	if max <= 0 {
		return nil, nil
	}
	var out []row
	size := 0
	if s.diskRows > 0 {
		br := bufio.NewReaderSize(io.NewSectionReader(s.f, s.readOff, s.writeOff-s.readOff), 64<<10)
		for i := int64(0); i < s.diskRows && len(out) < max; i++ {
			r, err := decodeRow(br)
			if err != nil {
				return out, fmt.Errorf("read log spill file at row %d: %w", s.base+i, err)
			}
			if len(out) > 0 && size+len(r.s) > maxBytes {
				return out, nil
			}
			size += len(r.s)
			out = append(out, r)
		}
	}
	for _, r := range s.mem {
		if len(out) >= max || (len(out) > 0 && size+len(r.s) > maxBytes) {
			break
		}
		size += len(r.s)
		out = append(out, r)
	}
	return out, nil
}

// drop forgets every row below index to (rows the forge has acknowledged).
func (s *rowStore) drop(to int64) error {
	if to > s.end {
		to = s.end
	}
	k := to - s.base
	if k <= 0 {
		return nil
	}
	s.freed = true
	var err error
	if s.diskRows > 0 {
		if k >= s.diskRows {
			k -= s.diskRows
			s.base += s.diskRows
			s.diskRows, s.readOff, s.writeOff = 0, 0, 0
			if terr := s.f.Truncate(0); terr != nil {
				err = fmt.Errorf("truncate log spill file: %w", terr)
			}
		} else {
			br := bufio.NewReaderSize(io.NewSectionReader(s.f, s.readOff, s.writeOff-s.readOff), 64<<10)
			var skipped int64
			for i := int64(0); i < k; i++ {
				n, serr := skipRow(br)
				if serr != nil {
					return fmt.Errorf("skip acknowledged rows in log spill file: %w", serr)
				}
				skipped += n
			}
			s.readOff += skipped
			s.diskRows -= k
			s.base += k
			return s.maybeCompact()
		}
	}
	for _, r := range s.mem[:k] {
		s.memSize -= rowCost(r)
	}
	clear(s.mem[:k])
	s.mem = s.mem[k:]
	if len(s.mem) == 0 {
		s.mem = nil
	}
	s.base += k
	return err
}

// maybeCompact moves the live part of the spill file to its start once the
// acknowledged part before it is large and at least half the file, so a
// long outage followed by steady output does not grow the file forever.
func (s *rowStore) maybeCompact() error {
	if s.readOff == 0 || s.readOff < s.compactAt || 2*s.readOff < s.writeOff {
		return nil
	}
	return s.compact()
}

// compact moves the live part of the spill file to its start.
func (s *rowStore) compact() error {
	live := s.writeOff - s.readOff
	// The target [0, live) ends before the source starts (readOff ≥ live),
	// so a failed copy leaves the rows at readOff intact.
	n, err := io.Copy(io.NewOffsetWriter(s.f, 0), io.NewSectionReader(s.f, s.readOff, live))
	if err == nil && n != live {
		err = io.ErrShortWrite
	}
	if err == nil {
		err = s.f.Truncate(live)
	}
	if err != nil {
		return fmt.Errorf("compact log spill file: %w", err)
	}
	s.readOff, s.writeOff = 0, live
	return nil
}

// close releases the spill file.
func (s *rowStore) close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	if s.path != "" {
		err = errors.Join(err, os.Remove(s.path))
	}
	s.f = nil
	return err
}

func decodeRow(br *bufio.Reader) (row, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return row{}, err
	}
	ns, err := binary.ReadVarint(br)
	if err != nil {
		return row{}, err
	}
	if n > maxRowBytes*4 {
		return row{}, fmt.Errorf("corrupt row length %d", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return row{}, err
	}
	return row{t: time.Unix(0, ns), s: string(b)}, nil
}

func skipRow(br *bufio.Reader) (int64, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return 0, err
	}
	ns, err := binary.ReadVarint(br)
	if err != nil {
		return 0, err
	}
	if _, err := br.Discard(int(n)); err != nil {
		return 0, err
	}
	return int64(uvarintLen(n) + varintLen(ns) + int(n)), nil
}

func uvarintLen(v uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], v)
}

func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// sizeText formats n bytes for a log line.
func sizeText(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
