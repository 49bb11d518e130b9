package hostile

import (
	"os"
	"strings"
)

const goodRow = `{"seed": 1, "size": 4, "p": 0.8, "is_slippery": false, "max_steps": 100}`

func dataCases() []hcase {
	type df struct {
		name, file, body string
		want             string
		ok               bool // a valid file: trains (exit 0)
	}
	fs := []df{
		{name: "empty jsonl", file: "t.jsonl", body: ""},
		{name: "empty csv", file: "t.csv", body: ""},
		{name: "only newlines", file: "t.jsonl", body: "\n\n\n"},
		{name: "not json", file: "t.jsonl", body: "hello world\n"},
		{name: "truncated object", file: "t.jsonl", body: `{"seed": 1, "size": 4` + "\n"},
		{name: "array row", file: "t.jsonl", body: "[1,2,3]\n"},
		{name: "null row", file: "t.jsonl", body: "null\n"},
		{name: "number row", file: "t.jsonl", body: "42\n"},
		{name: "seed string", file: "t.jsonl", body: `{"seed": "x", "size": 4, "p": 0.8}` + "\n"},
		{name: "size string", file: "t.jsonl", body: `{"seed": 1, "size": "four", "p": 0.8}` + "\n"},
		{name: "size zero", file: "t.jsonl", body: `{"seed": 1, "size": 0, "p": 0.8}` + "\n"},
		{name: "size negative", file: "t.jsonl", body: `{"seed": 1, "size": -4, "p": 0.8}` + "\n"},
		{name: "size huge", file: "t.jsonl", body: `{"seed": 1, "size": 1000000000, "p": 0.8}` + "\n"},
		{name: "size 1e300", file: "t.jsonl", body: `{"seed": 1, "size": 1e300, "p": 0.8}` + "\n"},
		{name: "p nan-ish", file: "t.jsonl", body: `{"seed": 1, "size": 4, "p": "NaN"}` + "\n"},
		{name: "p out of range", file: "t.jsonl", body: `{"seed": 1, "size": 4, "p": 7}` + "\n"},
		{name: "max_steps negative", file: "t.jsonl", body: `{"seed": 1, "size": 4, "p": 0.8, "max_steps": -1}` + "\n"},
		{name: "max_steps huge", file: "t.jsonl", body: `{"seed": 1, "size": 4, "p": 0.8, "max_steps": 1e30}` + "\n"},
		{name: "unknown field", file: "t.jsonl", body: `{"seed": 1, "size": 4, "p": 0.8, "evil": 1}` + "\n"},
		{name: "missing fields", file: "t.jsonl", body: "{}\n"},
		{name: "good then bad", file: "t.jsonl", body: goodRow + "\n{\n"},
		{name: "huge row 8 MiB", file: "t.jsonl", body: `{"seed": 1, "size": 4, "p": 0.8, "pad": "` + strings.Repeat("x", 8<<20) + `"}` + "\n"},
		{name: "huge line no newline 80 MiB", file: "t.jsonl", body: strings.Repeat("[", 80<<20)},
		{name: "deep nesting", file: "t.jsonl", body: strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n"},
		{name: "non-UTF-8", file: "t.jsonl", body: "\xff\xfe\xfd\n"},
		{name: "NUL bytes", file: "t.jsonl", body: "\x00\x00\x00\n"},
		{name: "BOM jsonl", file: "t.jsonl", body: "\xef\xbb\xbf" + goodRow + "\n", ok: true},
		{name: "BOM csv", file: "t.csv", body: "\xef\xbb\xbfseed,size,p,is_slippery,max_steps\n1,4,0.8,false,100\n", ok: true},
		{name: "UTF-16 BOM", file: "t.jsonl", body: "\xff\xfe{\x00}\x00\n\x00"},
		{name: "csv header only", file: "t.csv", body: "seed,size,p\n"},
		{name: "csv ragged", file: "t.csv", body: "seed,size,p\n1,4\n"},
		{name: "csv wrong types", file: "t.csv", body: "seed,size,p\nx,y,z\n"},
		{name: "csv unterminated quote", file: "t.csv", body: "seed,size,p\n\"1,4,0.8\n"},
		{name: "csv duplicate column", file: "t.csv", body: "seed,seed,size,p\n1,2,4,0.8\n"},
		{name: "csv huge field", file: "t.csv", body: "seed,size,p\n1,4," + strings.Repeat("9", 4<<20) + "\n"},
		{name: "csv binary", file: "t.csv", body: "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"},
		{name: "JSON in a .parquet file", file: "t.parquet", body: goodRow + "\n"},
		{name: "unknown extension", file: "t.xlsx", body: goodRow + "\n"},
		{name: "missing file", file: "", body: ""},
		{name: "directory", file: "dir/", body: ""},
	}
	var cs []hcase
	for _, f := range fs {
		f := f
		expect := "exit 2 naming data.train_files, nothing written"
		if f.ok {
			expect = "trains (exit 0): a UTF-8 BOM is not an error"
		}
		cs = append(cs, hcase{
			name:   "dataset/" + f.name,
			expect: expect,
			fast:   f.name == "seed string",
			run: func(c *cx) {
				var p string
				switch {
				case f.file == "":
					p = c.path("missing.jsonl")
				case strings.HasSuffix(f.file, "/"):
					p = c.path("dir")
					os.Mkdir(p, 0o755)
				default:
					p = c.write(f.file, []byte(f.body))
				}
				args := []string{"env.id=FrozenLake-v1", `data.train_files=["` + p + `"]`}
				if f.ok {
					r := c.run(opt{}, append([]string{"train", "--quiet", "--run-dir", c.path("run"), "ppo.total_timesteps=1024", "trainer.threads=1"}, args...)...)
					c.expectExit(r, 0)
					c.note("exit %d", r.code)
					return
				}
				refused(c, []string{"data.train_files"}, args...)
			},
		})
	}
	return cs
}
