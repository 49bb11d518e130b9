package remote

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Authentication (remote/PROTOCOL.md, "Authentication"): a server at a TCP
// address that holds a shared secret makes every client prove that it holds
// the same one before hello, by a challenge and response over two fresh
// nonces; the server proves it too. The secret itself never crosses the
// wire, only HMAC-SHA256 values over the nonces, and proofs are compared in
// constant time.

// MinSecretBytes is the shortest secret accepted: 16 bytes of a random
// secret (`head -c 32 /dev/urandom | base64`) are beyond guessing.
const MinSecretBytes = 16

// nonceBytes is the length of each side's nonce.
const nonceBytes = 32

// The labels that keep the client's and the server's proofs apart: the
// server answers with a proof over a nonce the client chose, so without
// them a client could make the server compute the client's proof for it.
const (
	clientProofLabel = "agenttrainer remote v3 client proof"
	serverProofLabel = "agenttrainer remote v3 server proof"
)

// ReadSecret reads a shared secret from path: the file's bytes without
// trailing white space (a final newline), at least MinSecretBytes of them.
// A file that other users may read is refused, as ssh refuses such keys.
func ReadSecret(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the secret file: %v", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("the secret file %s is not a regular file", path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o007 != 0 {
		return nil, fmt.Errorf("the secret file %s may be read or written by other users (mode %04o): run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	if fi.Size() > 64<<10 {
		return nil, fmt.Errorf("the secret file %s is %d bytes; a secret is a line of at most 64 KiB", path, fi.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the secret file: %v", err)
	}
	b = bytes.TrimRight(b, " \t\r\n")
	if len(b) < MinSecretBytes {
		return nil, fmt.Errorf("the secret in %s is %d bytes, fewer than %d: write a random one, e.g. head -c 32 /dev/urandom | base64 > %s; chmod 600 %s",
			path, len(b), MinSecretBytes, path, path)
	}
	return b, nil
}

// NewSecret returns a random secret in the text form ReadSecret reads.
func NewSecret() ([]byte, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	return []byte(hex.EncodeToString(raw)), nil
}

// newNonce returns a fresh nonce as hex.
func newNonce() (string, error) {
	raw := make([]byte, nonceBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	return hex.EncodeToString(raw), nil
}

// proof is HMAC-SHA256(secret, label ‖ 0 ‖ clientNonce ‖ serverNonce) in hex.
func proof(secret []byte, label, clientNonce, serverNonce string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	m.Write([]byte{0})
	m.Write([]byte(clientNonce))
	m.Write([]byte(serverNonce))
	return hex.EncodeToString(m.Sum(nil))
}

// proofMatches compares a proof received with the one expected in constant
// time (hmac.Equal).
func proofMatches(got, want string) bool {
	return hmac.Equal([]byte(got), []byte(want))
}

// validNonce reports whether s is a nonce as the protocol sends them:
// 2·nonceBytes lower-case hex digits.
func validNonce(s string) bool {
	if len(s) != 2*nonceBytes {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// challengeRequest is the client's first message on an authenticated
// connection; call adds the id.
type challengeRequest struct {
	Type     string `json:"type"`
	Protocol int    `json:"protocol"`
	Nonce    string `json:"nonce"`
}

// authRequest carries the client's proof.
type authRequest struct {
	Type  string `json:"type"`
	Proof string `json:"proof"`
}

// authenticate runs the client's side of the challenge and response
// before hello: it proves that it holds secret and checks that the server
// does.
func (r *RemoteEnv) authenticate(secret []byte, o RemoteOptions) error {
	const op = "handshake"
	cn, err := newNonce()
	if err != nil {
		return r.breakf(op, "cannot draw a nonce: %v", err)
	}
	f, err := r.call(challengeRequest{Type: "challenge", Protocol: RemoteProtocolVersion, Nonce: cn}, nil, "authentication", o.HandshakeTimeout)
	if err != nil {
		if strings.Contains(err.Error(), "before hello") || strings.Contains(err.Error(), "unknown message type") {
			err = fmt.Errorf("%w\n(the server does not know protocol %d's authentication: it is older than this client; copy this agenttrainer's remote/protocol.py next to it and start it with --secret-file, or serve it with agenttrainer env-server --secret-file)", err, RemoteProtocolVersion)
			r.broken = err
		}
		return err
	}
	h := &f.Header
	if h.Type != "challenge" {
		return r.breakf(op, "the server answered the authentication challenge with a %q message: it does not speak protocol %d's authentication (remote/PROTOCOL.md)", h.Type, RemoteProtocolVersion)
	}
	if !validNonce(h.Nonce) {
		return r.breakf(op, "the server's challenge carries the nonce %s, want %d lower-case hex digits (remote/PROTOCOL.md, Authentication)", quoteBytes([]byte(h.Nonce)), 2*nonceBytes)
	}
	if h.Nonce == cn {
		return r.breakf(op, "the server's nonce repeats the client's: it is replaying the challenge, not answering it")
	}
	if !proofMatches(h.Proof, proof(secret, serverProofLabel, cn, h.Nonce)) {
		return r.breakf(op, "authentication failed: the server's proof does not match env.args.secret_file: the server holds a different secret (or none); give both sides the same secret file")
	}
	f, err = r.call(authRequest{Type: "auth", Proof: proof(secret, clientProofLabel, cn, h.Nonce)}, nil, "authentication", o.HandshakeTimeout)
	if err != nil {
		return err
	}
	if f.Header.Type != "auth" || !f.Header.OK {
		return r.breakf(op, "the server answered the client's proof with a %q message (ok %v), want \"auth\" with ok true", f.Header.Type, f.Header.OK)
	}
	return nil
}

// ServerAuth is the server's side of the handshake for one connection.
type ServerAuth struct {
	secret                   []byte
	clientNonce, serverNonce string
}

// NewServerAuth starts a server's side of the handshake with secret.
func NewServerAuth(secret []byte) *ServerAuth { return &ServerAuth{secret: secret} }

// Challenge answers the client's challenge nonce with the server's nonce
// and proof.
func (a *ServerAuth) Challenge(clientNonce string) (serverNonce, serverProof string, err error) {
	if !validNonce(clientNonce) {
		return "", "", fmt.Errorf("the challenge's nonce must be %d lower-case hex digits", 2*nonceBytes)
	}
	if a.serverNonce, err = newNonce(); err != nil {
		return "", "", err
	}
	a.clientNonce = clientNonce
	return a.serverNonce, proof(a.secret, serverProofLabel, clientNonce, a.serverNonce), nil
}

// Verify checks the client's proof against the nonces of Challenge.
func (a *ServerAuth) Verify(clientProof string) bool {
	if a.serverNonce == "" {
		return false
	}
	return proofMatches(clientProof, proof(a.secret, clientProofLabel, a.clientNonce, a.serverNonce))
}
