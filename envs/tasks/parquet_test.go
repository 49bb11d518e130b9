package tasks

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/parquet-go/parquet-go"
)

type qaRow struct {
	Question string   `parquet:"question"`
	Answer   string   `parquet:"answer"`
	Target   int32    `parquet:"target"`
	Nums     []int64  `parquet:"nums,list"`
	Score    float32  `parquet:"score"`
	Note     *string  `parquet:"note,optional"`
	Tags     []string `parquet:"tags,list"`
}

func TestParquetRoundTrip(t *testing.T) {
	note := "easy"
	var buf bytes.Buffer
	in := []qaRow{
		{"What is 2+2?", "4", 4, []int64{2, 2}, 0.1, &note, []string{"arith"}},
		{"Capital of France?", "Paris", 0, nil, 1.5, nil, nil},
	}
	for _, codec := range []parquet.WriterOption{parquet.Compression(&parquet.Zstd), parquet.Compression(&parquet.Snappy), parquet.Compression(&parquet.Gzip)} {
		buf.Reset()
		if err := parquet.Write(&buf, in, codec); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "qa.parquet")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		rows, err := LoadTasks(path)
		if err != nil {
			t.Fatal(err)
		}
		want := []envs.Params{
			{"question": "What is 2+2?", "answer": "4", "target": int64(4), "nums": []any{int64(2), int64(2)}, "score": 0.1, "note": "easy", "tags": []any{"arith"}},
			{"question": "Capital of France?", "answer": "Paris", "target": int64(0), "nums": []any{}, "score": 1.5, "tags": []any{}},
		}
		if !reflect.DeepEqual(rows, want) {
			t.Fatalf("read\n%#v\nwant\n%#v", rows, want)
		}
	}
}

// A file from Apache's parquet-testing (written by Impala, Snappy pages,
// an INT96 timestamp): every row and column comes back.
func TestParquetFromAnotherWriter(t *testing.T) {
	rows, err := LoadTasks("testdata/alltypes_plain.snappy.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[1]["id"] != int64(7) || rows[1]["double_col"] != 10.1 || rows[1]["float_col"] != 1.1 ||
		rows[1]["string_col"] != "1" || rows[0]["bool_col"] != true || len(rows[0]) != 11 {
		t.Fatalf("%#v", rows)
	}
}

func TestBadParquet(t *testing.T) {
	var good bytes.Buffer
	if err := parquet.Write(&good, []qaRow{{Question: "q", Answer: "a"}}); err != nil {
		t.Fatal(err)
	}
	g := good.Bytes()
	type bin struct {
		B []byte `parquet:"b"`
	}
	var binary bytes.Buffer
	if err := parquet.Write(&binary, []bin{{[]byte{0xff, 0xfe}}}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "is empty"},
		{"text", []byte("question,answer\n"), "does not start and end with the PAR1 mark"},
		{"truncated", g[:len(g)/2], "PAR1"},
		{"footer cut", append(append([]byte{}, g[:len(g)-12]...), []byte("\x00\x00\x00\x00\x00\x00\x00\x00PAR1")...), "not a readable Parquet file"},
		{"garbage inside", append(append([]byte("PAR1"), bytes.Repeat([]byte{0xaa}, 300)...), []byte("\x10\x00\x00\x00PAR1")...), "not a readable Parquet file"},
		{"binary column", binary.Bytes(), `column "b": a binary value that is not UTF-8 text`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.parquet")
			os.WriteFile(path, tt.data, 0o644)
			_, err := LoadTasks(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// FuzzParseParquet feeds arbitrary bytes, seeded with real files, as a
// Parquet task file: read or refused, never a panic or a hang.
func FuzzParseParquet(f *testing.F) {
	var good bytes.Buffer
	parquet.Write(&good, []qaRow{{Question: "q", Answer: "a", Nums: []int64{1, 2}}}, parquet.Compression(&parquet.Snappy))
	f.Add(good.Bytes())
	if b, err := os.ReadFile("testdata/alltypes_plain.snappy.parquet"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := ParseTasks(data, ".parquet")
		if err == nil && len(rows) == 0 {
			t.Fatal("no error and no rows")
		}
	})
}
