package tasks

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
)

// maxParquetRows bounds the rows of a Parquet task file.
const maxParquetRows = 10_000_000

// parseParquetTasks reads a Parquet file's rows (github.com/parquet-go,
// every column, nested lists and structs as lists and objects). Values
// become what a JSON row holds: int64, float64, bool, string (binary
// columns that are valid UTF-8; others are refused), lists and objects; a
// null leaves the column out of that row, as an empty CSV cell does.
func parseParquetTasks(data []byte) (rows []envs.Params, err error) {
	defer func() {
		if r := recover(); r != nil {
			rows, err = nil, fmt.Errorf("not a readable Parquet file (the reader failed: %v)", r)
		}
	}()
	if len(data) < 12 || !bytes.HasPrefix(data, []byte("PAR1")) || !bytes.HasSuffix(data, []byte("PAR1")) {
		return nil, errors.New("not a Parquet file: it does not start and end with the PAR1 mark")
	}
	// The footer's length sits before the closing mark; the reader
	// allocates that much before it checks it against the file.
	if footer := int64(binary.LittleEndian.Uint32(data[len(data)-8:])); footer > int64(len(data))-12 {
		return nil, fmt.Errorf("not a readable Parquet file: its footer claims %d bytes of a %d-byte file", footer, len(data))
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("not a readable Parquet file: %v", err)
	}
	if err := checkParquetPages(f, data); err != nil {
		return nil, fmt.Errorf("not a readable Parquet file: %v", err)
	}
	// Rows are read in chunks, so a footer that claims more rows than
	// the pages hold costs nothing; and at most 64 rows per byte of file
	// (a run-length page can claim millions of rows in a few bytes).
	limit := min(int64(maxParquetRows), 64*int64(len(data))+1000)
	if n := f.NumRows(); n > limit {
		return nil, fmt.Errorf("the Parquet file claims %d rows, more than %d for a file of %d bytes", n, limit, len(data))
	}
	r := parquet.NewGenericReader[map[string]any](f, f.Schema())
	defer r.Close()
	var raw []map[string]any
	chunk := make([]map[string]any, 256)
	for {
		for i := range chunk {
			chunk[i] = map[string]any{}
		}
		k, err := r.Read(chunk)
		raw = append(raw, chunk[:k]...)
		if int64(len(raw)) > limit {
			return nil, fmt.Errorf("the Parquet file holds more than %d rows for its %d bytes", limit, len(data))
		}
		if err == io.EOF || (err == nil && k == 0) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading row %d: %v", len(raw)+1, err)
		}
	}
	if len(raw) == 0 {
		return nil, errors.New("the Parquet file holds no rows")
	}
	got := len(raw)
	rows = make([]envs.Params, got)
	for i, m := range raw {
		row := make(envs.Params, len(m))
		for k, v := range m {
			x, ok, err := parquetValue(v)
			if err != nil {
				return nil, fmt.Errorf("row %d, column %q: %v", i+1, k, err)
			}
			if ok {
				row[k] = x
			}
		}
		rows[i] = row
	}
	return rows, nil
}

// parquetValue converts a value read from Parquet; ok is false for null.
func parquetValue(v any) (any, bool, error) {
	switch x := v.(type) {
	case nil:
		return nil, false, nil
	case bool, int64, float64:
		return x, true, nil
	case string:
		if !utf8.ValidString(x) {
			return nil, false, errors.New("a binary value that is not UTF-8 text")
		}
		return x, true, nil
	case int32:
		return int64(x), true, nil
	case int16:
		return int64(x), true, nil
	case int8:
		return int64(x), true, nil
	case int:
		return int64(x), true, nil
	case uint32:
		return int64(x), true, nil
	case uint16:
		return int64(x), true, nil
	case uint8:
		return int64(x), true, nil
	case uint64:
		if x > math.MaxInt64 {
			return float64(x), true, nil
		}
		return int64(x), true, nil
	case float32:
		// The float32's shortest decimal, as a reader of the file sees it.
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
		return f, true, nil
	case []byte:
		if !utf8.Valid(x) {
			return nil, false, errors.New("a binary value that is not UTF-8 text")
		}
		return string(x), true, nil
	case deprecated.Int96:
		return x.String(), true, nil // a legacy timestamp: kept as its number
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			y, ok, err := parquetValue(e)
			if err != nil {
				return nil, false, err
			}
			if ok {
				out = append(out, y)
			} else {
				out = append(out, nil)
			}
		}
		return out, true, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			y, ok, err := parquetValue(e)
			if err != nil {
				return nil, false, err
			}
			if ok {
				out[k] = y
			}
		}
		return out, true, nil
	}
	return nil, false, fmt.Errorf("a value of type %T, which tasks cannot hold", v)
}
