package tasks

import "testing"

// FuzzParseTasks feeds arbitrary bytes as a task file, CSV or JSON Lines:
// parsed or refused, never a panic, and every parsed row has only string
// keys with the value kinds a task may hold. The corpus lives in
// testdata/fuzz/FuzzParseTasks.
func FuzzParseTasks(f *testing.F) {
	f.Add([]byte("size,p,seed\n4,0.8,1\n8,0.9,2\n"), true)
	f.Add([]byte("\xef\xbb\xbfa, b ,c\r\n4, 0.5,TRUE\r\n"), true)
	f.Add([]byte("a,b\n\"x\"\"y\",2\n1\n"), true)
	f.Add([]byte(`{"size":4,"p":0.8,"seed":1}`+"\n"+`{"size":8,"map":["SF","HG"]}`+"\n"), false)
	f.Add([]byte(`[{"size":4},{"size":5}]`), false)
	f.Add([]byte(`{"a":{"b":[1,{"c":null}]}}`), false)
	f.Add([]byte("{\"a\":1e999}\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, csv bool) {
		ext := ".jsonl"
		if csv {
			ext = ".csv"
		}
		rows, err := ParseTasks(data, ext)
		if err != nil {
			return
		}
		for i, row := range rows {
			if row == nil {
				t.Fatalf("row %d is nil", i)
			}
		}
		if _, err := ParseTasks(data, ".json"); err != nil && !csv {
			t.Fatalf("JSON Lines parsed as .jsonl but not as .json: %v", err)
		}
	})
}
