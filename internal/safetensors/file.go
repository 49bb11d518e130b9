package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// File is an open safetensors file whose header has been checked; values
// are read from it tensor by tensor, converted on the way.
type File struct {
	Path string
	Header
	f       *os.File
	dataOff int64 // where the data starts in the file
	index   map[string]int
	opt     Options
}

// Open opens the file at path and checks its header (nothing else is read):
// a regular file (a named pipe would block, a device never end).
func Open(path string, opt Options) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	file, err := openFile(f, path, opt)
	if err != nil {
		f.Close()
		return nil, err
	}
	return file, nil
}

func openFile(f *os.File, path string, opt Options) (*File, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() { // swapped for something else since Stat
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	size := st.Size()
	var prefix [8]byte
	if _, err := f.ReadAt(prefix[:], 0); err != nil && size >= 8 {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	n, err := headerLength(prefix[:], size)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	h := make([]byte, n)
	if _, err := f.ReadAt(h, 8); err != nil {
		return nil, fmt.Errorf("%s: reading the header: %v", path, err)
	}
	hdr, err := ParseHeader(h, size-8-n, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	file := &File{Path: path, Header: *hdr, f: f, dataOff: 8 + n, index: map[string]int{}, opt: opt}
	for i, e := range hdr.Entries {
		file.index[e.Name] = i
	}
	return file, nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Entry returns the named tensor's entry.
func (f *File) Entry(name string) (Entry, bool) {
	i, ok := f.index[name]
	if !ok {
		return Entry{}, false
	}
	return f.Entries[i], true
}

// Float32Bytes is the memory the file's tensors take as float32: what
// reading all of them allocates.
func (f *File) Float32Bytes() int64 {
	var n int64
	for _, e := range f.Entries {
		n += 4 * e.Elements()
	}
	return n
}

// readChunk is the bytes read from the file at a time.
const readChunk = 1 << 20

// Read reads the named tensor's values into dst, which must hold exactly
// its element count, streaming the file a chunk at a time.
func (f *File) Read(name string, dst []float32) error {
	e, ok := f.Entry(name)
	if !ok {
		return fmt.Errorf("%s holds no tensor %s", f.Path, name)
	}
	if !e.DType.readable() {
		return fmt.Errorf("%s: %v", f.Path, notFloat(name, e.DType))
	}
	if int64(len(dst)) != e.Elements() {
		return fmt.Errorf("%s: tensor %s holds %d values, not the %d asked for", f.Path, name, e.Elements(), len(dst))
	}
	size := e.DType.Size()
	buf := make([]byte, min(readChunk, e.End-e.Begin))
	per := len(buf) / size
	for done := 0; done < len(dst); {
		n := min(per, len(dst)-done)
		raw := buf[:n*size]
		if _, err := f.f.ReadAt(raw, f.dataOff+e.Begin+int64(done*size)); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%s: tensor %s: the file was cut short while it was read", f.Path, name)
			}
			return fmt.Errorf("%s: tensor %s: %v", f.Path, name, err)
		}
		if err := convert(dst[done:done+n], raw, e.DType); err != nil {
			return fmt.Errorf("%s: tensor %s: %v", f.Path, name, err)
		}
		if f.opt.Finite {
			if err := checkFinite(name, dst[done:done+n], int64(done)); err != nil {
				return fmt.Errorf("%s: %v", f.Path, err)
			}
		}
		done += n
	}
	return nil
}

// ReadAll reads every tensor of the file (small files only: it allocates
// Float32Bytes).
func (f *File) ReadAll() (map[string]Tensor, error) {
	out := make(map[string]Tensor, len(f.Entries))
	for _, e := range f.Entries {
		t := Tensor{Name: e.Name, Shape: e.Shape, Data: make([]float32, e.Elements())}
		if err := f.Read(e.Name, t.Data); err != nil {
			return nil, err
		}
		out[e.Name] = t
	}
	return out, nil
}

// IndexName is the file that maps a sharded model's tensors to its shards.
const IndexName = "model.safetensors.index.json"

// SingleName is the file of a model in one piece.
const SingleName = "model.safetensors"

// maxIndex bounds an index file (a few hundred KB for the largest models).
const maxIndex = 64 << 20

// Set is a model's tensors in one file or in shards, opened and checked.
type Set struct {
	Files []*File
	where map[string]*File
}

// OpenDir opens the model in dir: through model.safetensors.index.json
// when it is there, else model.safetensors.
func OpenDir(dir string, opt Options) (*Set, error) {
	index := filepath.Join(dir, IndexName)
	if _, err := os.Stat(index); err == nil {
		return OpenIndex(index, opt)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	single := filepath.Join(dir, SingleName)
	if _, err := os.Stat(single); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s holds neither %s nor %s: not a model directory in the Hugging Face layout", dir, SingleName, IndexName)
	}
	f, err := Open(single, opt)
	if err != nil {
		return nil, err
	}
	return newSet([]*File{f})
}

// indexFile is model.safetensors.index.json.
type indexFile struct {
	Metadata  map[string]any    `json:"metadata"`
	WeightMap map[string]string `json:"weight_map"`
}

// OpenIndex opens the shards an index names (files beside it, by plain
// name) and checks that each tensor of the index is in the shard it names
// and that no shard holds a tensor the index does not list.
func OpenIndex(path string, opt Options) (*Set, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > maxIndex {
		return nil, fmt.Errorf("%s is not a regular file of at most %d bytes", path, maxIndex)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var idx indexFile
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("%s: weight_map is missing or empty", path)
	}
	var shards []string
	for name, shard := range idx.WeightMap {
		if shard == "" || shard != filepath.Base(shard) || shard == "." || shard == ".." || strings.ContainsAny(shard, `/\`) {
			return nil, fmt.Errorf("%s: tensor %s is mapped to %q, which is not a file name beside the index", path, name, shard)
		}
		if !slices.Contains(shards, shard) {
			shards = append(shards, shard)
		}
	}
	slices.Sort(shards)
	dir := filepath.Dir(path)
	var files []*File
	fail := func(err error) (*Set, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	for _, shard := range shards {
		f, err := Open(filepath.Join(dir, shard), opt)
		if err != nil {
			return fail(fmt.Errorf("shard named by %s: %w", path, err))
		}
		files = append(files, f)
	}
	set, err := newSet(files)
	if err != nil {
		return fail(err)
	}
	for name, shard := range idx.WeightMap {
		f, ok := set.where[name]
		if !ok {
			return fail(fmt.Errorf("%s maps tensor %s to %s, which does not hold it", path, name, shard))
		}
		if filepath.Base(f.Path) != shard {
			return fail(fmt.Errorf("%s maps tensor %s to %s, but it is in %s", path, name, shard, filepath.Base(f.Path)))
		}
	}
	for name, f := range set.where {
		if _, ok := idx.WeightMap[name]; !ok {
			return fail(fmt.Errorf("%s holds tensor %s, which %s does not list", f.Path, name, path))
		}
	}
	return set, nil
}

func newSet(files []*File) (*Set, error) {
	s := &Set{Files: files, where: map[string]*File{}}
	for _, f := range files {
		for _, e := range f.Entries {
			if other, ok := s.where[e.Name]; ok {
				return nil, fmt.Errorf("tensor %s is in both %s and %s", e.Name, other.Path, f.Path)
			}
			s.where[e.Name] = f
		}
	}
	return s, nil
}

// Close closes every file of the set.
func (s *Set) Close() error {
	var first error
	for _, f := range s.Files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Lookup returns the named tensor's entry and the file that holds it.
func (s *Set) Lookup(name string) (Entry, *File, bool) {
	f, ok := s.where[name]
	if !ok {
		return Entry{}, nil, false
	}
	e, _ := f.Entry(name)
	return e, f, true
}

// Names lists every tensor of the set, sorted.
func (s *Set) Names() []string {
	names := make([]string, 0, len(s.where))
	for n := range s.where {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Read reads the named tensor into dst (see File.Read).
func (s *Set) Read(name string, dst []float32) error {
	f, ok := s.where[name]
	if !ok {
		return fmt.Errorf("the model holds no tensor %s", name)
	}
	return f.Read(name, dst)
}

// Float32Bytes is the memory every tensor of the set takes as float32.
func (s *Set) Float32Bytes() int64 {
	var n int64
	for _, f := range s.Files {
		n += f.Float32Bytes()
	}
	return n
}
