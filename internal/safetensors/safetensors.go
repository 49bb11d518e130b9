// Package safetensors reads and writes the safetensors format of Hugging
// Face and of the project's checkpoints: an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and byte range
// (plus string metadata), then the raw little-endian data.
//
// Every header is checked before anything is allocated for a tensor: known
// dtype, sound shape, a byte range inside the data whose length is the
// shape's element count times the dtype's size, ranges that tile the data
// without gaps or overlaps, a bounded header. Values are float32 in memory:
// F32 is read as is, BF16 and F16 are widened exactly. Files open for
// streamed reading (a model's weights need not be in memory twice), and a
// model split into shards opens through its model.safetensors.index.json.
package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// DType is a tensor's element type as the header spells it.
type DType string

// The element types values can be read from and written as.
const (
	F32  DType = "F32"
	BF16 DType = "BF16"
	F16  DType = "F16"
)

// Size is the bytes of one element; 0 for a dtype the format does not know.
func (t DType) Size() int {
	switch t {
	case F32, I32, U32:
		return 4
	case BF16, F16, I16, U16:
		return 2
	case F64, I64, U64:
		return 8
	case BOOL, U8, I8, F8E5M2, F8E4M3:
		return 1
	}
	return 0
}

// Other dtypes of the format: recognised (so that a model in int8 is told
// so), not read.
const (
	F64    DType = "F64"
	I64    DType = "I64"
	U64    DType = "U64"
	I32    DType = "I32"
	U32    DType = "U32"
	I16    DType = "I16"
	U16    DType = "U16"
	I8     DType = "I8"
	U8     DType = "U8"
	BOOL   DType = "BOOL"
	F8E5M2 DType = "F8_E5M2"
	F8E4M3 DType = "F8_E4M3"
)

// readable says whether values of this dtype can be read as float32.
func (t DType) readable() bool { return t == F32 || t == BF16 || t == F16 }

// MaxHeader bounds a header's length, as the reference implementation does
// (100 MB: a model with a hundred thousand tensors needs a few).
const MaxHeader = 100 << 20

// Tensor is one tensor's values as float32, with its name and shape.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// Entry is one tensor as a header describes it: its byte range
// [Begin, End) is relative to the start of the data.
type Entry struct {
	Name       string
	DType      DType
	Shape      []int
	Begin, End int64
}

// Elements is the number of values the entry holds.
func (e Entry) Elements() int64 { return (e.End - e.Begin) / int64(e.DType.Size()) }

// Header is a checked header: the entries in the order of their data, and
// the string metadata.
type Header struct {
	Entries []Entry
	Meta    map[string]string
}

// Options restrict what a reader accepts.
type Options struct {
	// DTypes, when set, are the only dtypes accepted (a project checkpoint
	// is all F32); otherwise F32, BF16 and F16.
	DTypes []DType
	// Finite refuses a tensor holding a NaN or an infinity, naming it and
	// the index of the first such value.
	Finite bool
}

// accepts says whether a header may hold a tensor of dtype t: one of
// DTypes when they are given, else any dtype the format defines (a model
// file may carry an integer buffer beside its weights; reading that one
// tensor as float32 is refused).
func (o Options) accepts(t DType) bool {
	if len(o.DTypes) > 0 {
		return slices.Contains(o.DTypes, t)
	}
	return t.Size() > 0
}

func (o Options) dtypeError(name string, t DType) error {
	if t.Size() == 0 {
		return fmt.Errorf("tensor %s has dtype %q, which the safetensors format does not define", name, t)
	}
	if len(o.DTypes) > 0 {
		list := make([]string, len(o.DTypes))
		for i, d := range o.DTypes {
			list[i] = string(d)
		}
		return fmt.Errorf("tensor %s has dtype %s; only %s is supported here", name, t, strings.Join(list, ", "))
	}
	return notFloat(name, t)
}

// notFloat refuses reading a tensor of a dtype that is not a float of 16
// or 32 bits.
func notFloat(name string, t DType) error {
	return fmt.Errorf("tensor %s has dtype %s; only F32, BF16 and F16 can be read (convert the model to one of them)", name, t)
}

type rawEntry struct {
	DType   DType   `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

// ParseHeader checks a header's JSON against dataLen bytes of data that
// follow it.
func ParseHeader(h []byte, dataLen int64, opt Options) (*Header, error) {
	dec := json.NewDecoder(bytes.NewReader(h))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("bad safetensors header: not a JSON object")
	}
	hdr := &Header{Meta: map[string]string{}}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("bad safetensors header: %v", err)
		}
		name := tok.(string) // an object's keys are strings
		if seen[name] {
			return nil, fmt.Errorf("bad safetensors header: %q appears twice", name)
		}
		seen[name] = true
		var msg json.RawMessage
		if err := dec.Decode(&msg); err != nil {
			return nil, fmt.Errorf("bad safetensors header: %v", err)
		}
		if name == "" { // nothing could load it by name, and Write refuses it
			return nil, fmt.Errorf("bad safetensors header: a tensor has an empty name")
		}
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &hdr.Meta); err != nil {
				return nil, fmt.Errorf("bad metadata: %v (it must map names to strings)", err)
			}
			continue
		}
		e, err := parseEntry(name, msg, dataLen, opt)
		if err != nil {
			return nil, err
		}
		hdr.Entries = append(hdr.Entries, e)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("bad safetensors header: %v", err)
	}
	if rest := bytes.TrimRight(h[dec.InputOffset():], " \t\r\n\x00"); len(rest) > 0 {
		return nil, fmt.Errorf("bad safetensors header: %d bytes after the JSON object", len(rest))
	}
	if err := checkTiling(hdr.Entries, dataLen); err != nil {
		return nil, err
	}
	return hdr, nil
}

func parseEntry(name string, msg json.RawMessage, dataLen int64, opt Options) (Entry, error) {
	var r rawEntry
	if err := json.Unmarshal(msg, &r); err != nil {
		return Entry{}, fmt.Errorf("tensor %s: %v", name, err)
	}
	if !opt.accepts(r.DType) {
		return Entry{}, opt.dtypeError(name, r.DType)
	}
	if len(r.Offsets) != 2 {
		return Entry{}, fmt.Errorf("tensor %s: data_offsets must be [begin, end], not %v", name, r.Offsets)
	}
	size := int64(r.DType.Size())
	count, err := elements(r.Shape, dataLen/size)
	if err != nil {
		return Entry{}, fmt.Errorf("tensor %s: %v", name, err)
	}
	b, e := r.Offsets[0], r.Offsets[1]
	if b < 0 || e < b || e > dataLen || e-b != size*count {
		return Entry{}, fmt.Errorf("tensor %s: byte range %v does not fit shape %v of %s in %d data bytes (truncated?)",
			name, r.Offsets, r.Shape, r.DType, dataLen)
	}
	shape := make([]int, len(r.Shape))
	for i, d := range r.Shape {
		shape[i] = int(d)
	}
	return Entry{Name: name, DType: r.DType, Shape: shape, Begin: b, End: e}, nil
}

// checkTiling sorts entries by offset and checks that their ranges cover
// the data exactly once: the same total with an overlap would let two
// tensors share bytes and leave others unread.
func checkTiling(entries []Entry, dataLen int64) error {
	slices.SortStableFunc(entries, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Begin, b.Begin), cmp.Compare(a.End, b.End))
	})
	var covered, end int64
	for _, e := range entries {
		covered += e.End - e.Begin
	}
	if covered != dataLen {
		return fmt.Errorf("tensors cover %d of %d data bytes", covered, dataLen)
	}
	for _, e := range entries {
		if e.Begin != end {
			return fmt.Errorf("tensor byte ranges overlap or leave a gap at byte %d (tensor %s)", min(e.Begin, end), e.Name)
		}
		end = e.End
	}
	return nil
}

// elements is the number of values a shape holds, refused when a dimension
// is negative or the count exceeds limit (which also rules out overflow).
func elements(shape []int64, limit int64) (int64, error) {
	count := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", shape)
		}
		if d > 0 && count > limit/d {
			return 0, fmt.Errorf("shape %v holds more values than the file's data bytes", shape)
		}
		count *= d
	}
	return count, nil
}

// headerLength reads a file's header length from its first 8 bytes and
// checks it against the file's length and MaxHeader.
func headerLength(prefix []byte, fileLen int64) (int64, error) {
	if fileLen < 8 || len(prefix) < 8 {
		return 0, fmt.Errorf("%d bytes is too short for a safetensors file", fileLen)
	}
	n := binary.LittleEndian.Uint64(prefix[:8])
	if n > uint64(fileLen-8) {
		return 0, fmt.Errorf("header of %d bytes runs past the end of the file (truncated?)", n)
	}
	if n > MaxHeader {
		return 0, fmt.Errorf("header of %d bytes is larger than the %d the format allows", n, MaxHeader)
	}
	return int64(n), nil
}

// Decode parses a whole file held in memory: every tensor, as float32.
func Decode(b []byte, opt Options) (map[string]Tensor, map[string]string, error) {
	n, err := headerLength(b, int64(len(b)))
	if err != nil {
		return nil, nil, err
	}
	data := b[8+n:]
	hdr, err := ParseHeader(b[8:8+n], int64(len(data)), opt)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]Tensor, len(hdr.Entries))
	for _, e := range hdr.Entries {
		if !e.DType.readable() {
			return nil, nil, notFloat(e.Name, e.DType)
		}
		vals := make([]float32, e.Elements())
		if err := convert(vals, data[e.Begin:e.End], e.DType); err != nil {
			return nil, nil, fmt.Errorf("tensor %s: %v", e.Name, err)
		}
		if opt.Finite {
			if err := checkFinite(e.Name, vals, 0); err != nil {
				return nil, nil, err
			}
		}
		out[e.Name] = Tensor{Name: e.Name, Shape: e.Shape, Data: vals}
	}
	return out, hdr.Meta, nil
}

// Encode lays tensors out as F32 in memory (small files: checkpoints).
func Encode(tensors []Tensor, meta map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	if err := WriteTo(&buf, tensors, meta, F32); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteTo writes tensors in the format to w, their values stored as dtype
// (F32, BF16 or F16; the narrow types round to nearest even, as PyTorch
// converts). Tensors are stored in name order, as the reference writer
// does; a shape must hold exactly the tensor's values.
func WriteTo(w io.Writer, tensors []Tensor, meta map[string]string, dtype DType) error {
	if !dtype.readable() {
		return fmt.Errorf("cannot write dtype %s (F32, BF16 or F16)", dtype)
	}
	sorted := slices.Clone(tensors)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	header := map[string]any{}
	if len(meta) > 0 {
		header["__metadata__"] = meta
	}
	var off int64
	size := int64(dtype.Size())
	for i, t := range sorted {
		if i > 0 && sorted[i-1].Name == t.Name {
			return fmt.Errorf("tensor %s is given twice", t.Name)
		}
		if t.Name == "" || t.Name == "__metadata__" {
			return fmt.Errorf("a tensor cannot be named %q", t.Name)
		}
		count := int64(1)
		for _, d := range t.Shape {
			count *= int64(d)
		}
		if count != int64(len(t.Data)) {
			return fmt.Errorf("tensor %s: shape %v holds %d values, not the %d given", t.Name, t.Shape, count, len(t.Data))
		}
		n := count * size
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = struct {
			DType   DType    `json:"dtype"`
			Shape   []int    `json:"shape"`
			Offsets [2]int64 `json:"data_offsets"`
		}{dtype, shape, [2]int64{off, off + n}}
		off += n
	}
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(h)%8 != 0 { // the format pads the header with spaces to 8 bytes
		h = append(h, ' ')
	}
	if _, err := w.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(h)))); err != nil {
		return err
	}
	if _, err := w.Write(h); err != nil {
		return err
	}
	chunk := make([]byte, 0, 1<<16)
	for _, t := range sorted {
		for len(t.Data) > 0 {
			n := min(len(t.Data), cap(chunk)/int(size))
			chunk = encodeValues(chunk[:0], t.Data[:n], dtype)
			if _, err := w.Write(chunk); err != nil {
				return err
			}
			t.Data = t.Data[n:]
		}
	}
	return nil
}

// errNonFinite marks a refused NaN or infinity.
var errNonFinite = errors.New("non-finite value")
