package control

import (
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/trainer"
	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// FuzzRequests sends arbitrary bytes to a control socket's request loop as
// a client would: every line is answered or the connection is dropped,
// never a panic, and the server lets go of the connection once the client
// does. The corpus lives in testdata/fuzz/FuzzRequests.
func FuzzRequests(f *testing.F) {
	for _, s := range []string{
		`{"op":"hello"}`, `{"op":"info"}` + "\n" + `{"op":"config"}`, `{"op":"edit","key":"ppo.ent_coef","value":"0.05"}`,
		`{"op":"edit","key":"env.num_envs","value":"1e12"}`, `{"op":"edit","key":"ppo.learning_rate","value":"1e308"}`,
		`{"op":"subscribe","buffer":-5}`, `{"op":"subscribe","buffer":1000000000}`, `{"op":"pause"}` + "\n" + `{"op":"resume"}`,
		`{"op":"save"}`, `{"op":"launch"}`, `not json`, `{"op":`, `[1,2,3]`, `{"op":"edit","key":"\u0000","value":"\u0091"}`,
	} {
		f.Add([]byte(s))
	}
	cfg := config.Default()
	if err := cfg.ApplyArgs([]string{"trainer.device=cpu"}); err != nil {
		f.Fatal(err)
	}
	tr, err := trainer.New(cfg, trainer.Options{RunDir: filepath.Join(f.TempDir(), "run")})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(tr.Close)
	s := &Server{t: tr, runDir: f.TempDir(), conns: map[net.Conn]struct{}{}, sameUser: func(net.Conn) error { return nil }}
	f.Fuzz(func(t *testing.T, input []byte) {
		client, server := net.Pipe()
		served := make(chan struct{})
		go func() {
			defer close(served)
			s.serve(server)
			server.Close()
		}()
		drained := make(chan struct{})
		go func() { // answers are read as they come, as a client would
			io.Copy(io.Discard, client)
			close(drained)
		}()
		client.SetWriteDeadline(time.Now().Add(10 * time.Second))
		client.Write(append(input, '\n'))
		client.Close()
		select {
		case <-served:
		case <-time.After(time.Minute):
			t.Fatalf("the server still holds the connection a minute after the client left (input %q)", input)
		}
		<-drained
	})
}
