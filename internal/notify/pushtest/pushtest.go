// Package pushtest is a local Web Push service for tests: it hands out
// subscriptions whose private keys it holds, checks each request's VAPID
// JWT (ES256, audience = the service's origin), decrypts the RFC 8291
// aes128gcm payload and records it. It can be told to answer a status
// instead (410 to test pruning, 500 to test retries).
package pushtest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Message is one accepted, decrypted push.
type Message struct {
	Endpoint string
	Payload  []byte
	TTL      string
	Subject  string // the VAPID sub claim
}

// Server is the stub push service.
type Server struct {
	URL string
	srv *httptest.Server

	mu       sync.Mutex // guards the fields below
	keys     map[string]*sub
	status   map[string]int
	messages []Message
	errors   []string
}

type sub struct {
	priv *ecdh.PrivateKey
	auth []byte
}

// New starts a stub on loopback, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{keys: map[string]*sub{}, status: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Subscription is what a browser's PushSubscription.toJSON() gives.
type Subscription struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
}

// Subscribe makes a new subscription (endpoint + keys) on this service.
func (s *Server) Subscribe(name string) Subscription {
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	var out Subscription
	out.Endpoint = s.URL + "/push/" + name
	out.Keys.P256dh = base64.RawURLEncoding.EncodeToString(priv.PublicKey().Bytes())
	out.Keys.Auth = base64.RawURLEncoding.EncodeToString(auth)
	s.mu.Lock()
	s.keys["/push/"+name] = &sub{priv: priv, auth: auth}
	s.mu.Unlock()
	return out
}

// SetStatus makes the endpoint answer status (0: accept again).
func (s *Server) SetStatus(name string, status int) {
	s.mu.Lock()
	s.status["/push/"+name] = status
	s.mu.Unlock()
}

// Messages returns the decrypted pushes so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Errors returns requests the stub refused as malformed.
func (s *Server) Errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errors...)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	k := s.keys[r.URL.Path]
	status := s.status[r.URL.Path]
	s.mu.Unlock()
	if k == nil {
		http.Error(w, "no such subscription", http.StatusNotFound)
		return
	}
	if status != 0 {
		http.Error(w, "stub status", status)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8192))
	subject, err := s.checkVAPID(r.Header.Get("Authorization"))
	var plain []byte
	if err == nil {
		if r.Header.Get("Content-Encoding") != "aes128gcm" {
			err = fmt.Errorf("content encoding %q", r.Header.Get("Content-Encoding"))
		} else {
			plain, err = Decrypt(body, k.priv, k.auth)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errors = append(s.errors, err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.messages = append(s.messages, Message{Endpoint: s.URL + r.URL.Path, Payload: plain, TTL: r.Header.Get("TTL"), Subject: subject})
	w.WriteHeader(http.StatusCreated)
}

// checkVAPID verifies "vapid t=JWT, k=KEY" (RFC 8292): an ES256 JWT
// signed by KEY, for this origin, not expired.
func (s *Server) checkVAPID(h string) (string, error) {
	if !strings.HasPrefix(h, "vapid ") {
		return "", errors.New("no vapid authorization")
	}
	var tok, key string
	for _, part := range strings.Split(strings.TrimPrefix(h, "vapid "), ",") {
		part = strings.TrimSpace(part)
		if v, ok := strings.CutPrefix(part, "t="); ok {
			tok = v
		} else if v, ok := strings.CutPrefix(part, "k="); ok {
			key = v
		}
	}
	kb, err := base64.RawURLEncoding.DecodeString(key)
	if err != nil || len(kb) != 65 {
		return "", errors.New("bad vapid key")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), kb)
	if err != nil {
		return "", errors.New("vapid key is not a P-256 point")
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "", errors.New("vapid token is not a JWT")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return "", errors.New("bad vapid signature encoding")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return "", errors.New("vapid signature does not verify")
	}
	cb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", errors.New("bad vapid claims")
	}
	var claims struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}
	if err := json.Unmarshal(cb, &claims); err != nil {
		return "", errors.New("bad vapid claims")
	}
	if claims.Aud != s.URL {
		return "", fmt.Errorf("vapid audience %q, want %q", claims.Aud, s.URL)
	}
	if claims.Exp < time.Now().Unix() {
		return "", errors.New("vapid token expired")
	}
	return claims.Sub, nil
}

// Decrypt opens an RFC 8291 / RFC 8188 aes128gcm body with the user
// agent's private key and auth secret.
func Decrypt(body []byte, priv *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("body shorter than the aes128gcm header")
	}
	salt := body[:16]
	rs := binary.BigEndian.Uint32(body[16:20])
	idlen := int(body[20])
	if len(body) < 21+idlen || idlen != 65 {
		return nil, fmt.Errorf("key id of %d bytes, want the 65-byte sender key", idlen)
	}
	senderPub, err := ecdh.P256().NewPublicKey(body[21 : 21+idlen])
	if err != nil {
		return nil, fmt.Errorf("sender key: %w", err)
	}
	ct := body[21+idlen:]
	if uint32(len(ct)) > rs {
		return nil, errors.New("more than one record")
	}
	shared, err := priv.ECDH(senderPub)
	if err != nil {
		return nil, err
	}
	// RFC 8291 §3.4.
	info := append([]byte("WebPush: info\x00"), priv.PublicKey().Bytes()...)
	info = append(info, senderPub.Bytes()...)
	prkKey, err := hkdf.Extract(sha256.New, shared, auth)
	if err != nil {
		return nil, err
	}
	ikm, err := hkdf.Expand(sha256.New, prkKey, string(info), 32)
	if err != nil {
		return nil, err
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, ct, nil)
	if err != nil {
		return nil, fmt.Errorf("decrypting: %w", err)
	}
	// RFC 8188 §2: strip padding; the last record's delimiter is 0x02.
	i := len(plain) - 1
	for i >= 0 && plain[i] == 0 {
		i--
	}
	if i < 0 || plain[i] != 2 {
		return nil, errors.New("no last-record padding delimiter")
	}
	return plain[:i], nil
}
