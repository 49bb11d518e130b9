package runstore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"time"
)

// TensorBoard writes TensorBoard event files: TFRecord framing (length, masked
// CRC-32C of the length, payload, masked CRC-32C of the payload) around
// hand-encoded tensorflow.Event protos holding scalar summaries. Each
// process writes its own file; TensorBoard merges a directory's files by step.
type TensorBoard struct {
	f   *os.File
	buf []byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}

// OpenTensorBoard starts a new event file in dir.
func OpenTensorBoard(dir string, now time.Time) (*TensorBoard, error) {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	name := fmt.Sprintf("events.out.tfevents.%d.%s.%d", now.Unix(), host, os.Getpid())
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	w := &TensorBoard{f: f}
	// The first event names the file format version.
	ev := appendDouble(nil, 1, float64(now.UnixNano())/1e9)
	ev = appendBytes(ev, 3, []byte("brain.Event:2"))
	return w, w.record(ev)
}

func (w *TensorBoard) record(payload []byte) error {
	w.buf = w.buf[:0]
	w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(len(payload)))
	w.buf = binary.LittleEndian.AppendUint32(w.buf, maskedCRC(w.buf[:8]))
	w.buf = append(w.buf, payload...)
	w.buf = binary.LittleEndian.AppendUint32(w.buf, maskedCRC(payload))
	_, err := w.f.Write(w.buf)
	return err
}

// Write appends one event with every defined figure of m that has a
// TensorBoard tag (the registry's, CleanRL's groups), and every figure m
// carries beyond its fields, at its env step.
func (w *TensorBoard) Write(m *Metrics, wall time.Time) error {
	var summary []byte
	scalar := func(tag string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		val := appendBytes(nil, 1, []byte(tag))
		val = appendFloat(val, 2, float32(v))
		summary = appendBytes(summary, 1, val)
	}
	for _, d := range MetricList() {
		if d.Tag != "" {
			v, _ := m.Value(d.Name)
			scalar(d.Tag, v)
		}
	}
	for _, name := range m.ExtraNames() {
		if d, ok := LookupMetric(name); ok && d.Reported() {
			scalar(d.Tag, float64(m.Extra[name]))
		}
	}
	ev := appendDouble(nil, 1, float64(wall.UnixNano())/1e9)
	ev = appendVarintField(ev, 2, uint64(m.Step))
	ev = appendBytes(ev, 5, summary)
	return w.record(ev)
}

// Close closes the file; a nil TensorBoard is closed already.
func (w *TensorBoard) Close() error {
	if w == nil {
		return nil
	}
	return w.f.Close()
}

// Protocol buffer wire encoding, just what Event and Summary need.
func appendVarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func appendVarintField(b []byte, field int, v uint64) []byte {
	return appendVarint(appendVarint(b, uint64(field<<3|0)), v)
}

func appendDouble(b []byte, field int, v float64) []byte {
	b = appendVarint(b, uint64(field<<3|1))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

func appendFloat(b []byte, field int, v float32) []byte {
	b = appendVarint(b, uint64(field<<3|5))
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
}

func appendBytes(b []byte, field int, v []byte) []byte {
	b = appendVarint(b, uint64(field<<3|2))
	b = appendVarint(b, uint64(len(v)))
	return append(b, v...)
}
