package speech

import (
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeEspeak writes a stand-in espeak-ng: a shell script that records its
// arguments and stdin, then runs body.
func fakeEspeak(t *testing.T, body string) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	bin = filepath.Join(dir, "espeak-ng")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + filepath.Join(dir, "args") + "\ncat > " + filepath.Join(dir, "stdin") + "\n" + body + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

// pipeWAV is a WAV header as espeak-ng writes it to a pipe (placeholder
// sizes) followed by n bytes of silence, as printf escapes.
func pipeWAV(n int) []byte {
	h := make([]byte, 44)
	copy(h, "RIFF")
	binary.LittleEndian.PutUint32(h[4:], 0x7ffff024)
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1)
	binary.LittleEndian.PutUint16(h[22:], 1)
	binary.LittleEndian.PutUint32(h[24:], 22050)
	binary.LittleEndian.PutUint32(h[28:], 44100)
	binary.LittleEndian.PutUint16(h[32:], 2)
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], 0x7ffff000)
	return append(h, make([]byte, n)...)
}

func checkWAV(t *testing.T, wav []byte) {
	t.Helper()
	if len(wav) < 44 || string(wav[:4]) != "RIFF" || string(wav[8:12]) != "WAVE" {
		t.Fatalf("not a WAV file: % x", wav[:min(len(wav), 16)])
	}
	if got := binary.LittleEndian.Uint32(wav[4:8]); int(got) != len(wav)-8 {
		t.Errorf("RIFF size %d, want %d", got, len(wav)-8)
	}
	if got := binary.LittleEndian.Uint32(wav[40:44]); string(wav[36:40]) != "data" || int(got) != len(wav)-44 {
		t.Errorf("data chunk %q size %d, want %d", wav[36:40], got, len(wav)-44)
	}
}

func TestEspeakRunsWithoutAShell(t *testing.T) {
	t.Parallel()
	wavFile := filepath.Join(t.TempDir(), "out.wav")
	if err := os.WriteFile(wavFile, pipeWAV(400), 0o600); err != nil {
		t.Fatal(err)
	}
	bin, dir := fakeEspeak(t, "cat "+wavFile)
	text := "--help; $(touch pwned) `id` \"quoted\" and -v xx"
	wav, err := (&Espeak{Path: bin}).Speak(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	checkWAV(t, wav)
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	if got, want := string(args), "--stdin\n--stdout\n-v\nen\n-s\n175\n"; got != want {
		t.Errorf("arguments %q, want %q (the text must never be an argument)", got, want)
	}
	stdin, _ := os.ReadFile(filepath.Join(dir, "stdin"))
	if string(stdin) != text {
		t.Errorf("stdin %q, want the text verbatim", stdin)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("the text ran as a shell command")
	}
}

func TestEspeakFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		timeout    time.Duration
		want       string
	}{
		{"timeout", "exec sleep 10", 200 * time.Millisecond, "took longer than 200ms"},
		{"exit status", "echo 'no voice xx' >&2; exit 3", 0, "no voice xx"},
		{"not WAV", "echo hello", 0, "did not write a WAV file"},
		{"no data chunk", "printf 'RIFF\\000\\000\\000\\000WAVEjunk'", 0, "no data chunk"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			bin, _ := fakeEspeak(t, c.body)
			start := time.Now()
			_, err := (&Espeak{Path: bin, Timeout: c.timeout}).Speak(context.Background(), "hello")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
	if _, err := (&Espeak{Path: "/nonexistent"}).Speak(context.Background(), "  "); err == nil {
		t.Error("empty text accepted")
	}
	if _, err := (&Espeak{Path: "/nonexistent"}).Speak(context.Background(), strings.Repeat("a", MaxSpeechInput+1)); err == nil {
		t.Error("over-long text accepted")
	}
}

// The real program, where it is installed (CI installs espeak-ng).
func TestEspeakReal(t *testing.T) {
	t.Parallel()
	e := FindEspeak()
	if e == nil {
		if _, err := exec.LookPath("espeak-ng"); err != nil {
			t.Skip("espeak-ng is not installed")
		}
	}
	wav, err := e.Speak(context.Background(), "Hello, this is Hestia.")
	if err != nil {
		t.Fatal(err)
	}
	checkWAV(t, wav)
	rate := binary.LittleEndian.Uint32(wav[24:28])
	if secs := float64(len(wav)-44) / 2 / float64(rate); secs < 0.5 || secs > 10 {
		t.Errorf("%.2f s of speech for one short sentence", secs)
	}
}

// Without a tts tier the service speaks with espeak-ng, says so in the
// content type, and reports the path.
func TestServiceFallsBackToEspeak(t *testing.T) {
	t.Parallel()
	wavFile := filepath.Join(t.TempDir(), "out.wav")
	if err := os.WriteFile(wavFile, pipeWAV(100), 0o600); err != nil {
		t.Fatal(err)
	}
	bin, _ := fakeEspeak(t, "cat "+wavFile)
	rec := &recorder{}
	svc := &Service{Local: &Espeak{Path: bin}, Usage: rec}
	if svc.TTSPath() != PathEspeak || svc.STTPath() != PathNone {
		t.Errorf("paths %s/%s", svc.STTPath(), svc.TTSPath())
	}
	if svc.SpeakerFor("telegram", "voice") != nil {
		t.Error("espeak-ng offered to a platform that needs Ogg/Opus")
	}
	mux := http.NewServeMux()
	svc.Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/audio/speech", "application/json", strings.NewReader(`{"input":"hi there","response_format":"mp3"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "audio/wav" {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	checkWAV(t, body)
	rec.mu.Lock()
	if len(rec.recs) != 1 || rec.recs[0].Model != EspeakModel || rec.recs[0].Kind != "tts" {
		t.Errorf("usage rows %+v", rec.recs)
	}
	rec.mu.Unlock()
	var none *Service
	if none.TTSPath() != PathNone || (&Service{}).TTSPath() != PathNone || (&Service{TTS: &Client{}}).TTSPath() != PathEndpoint {
		t.Error("paths of an empty or endpoint service")
	}
}

func FuzzFixWAVSizes(f *testing.F) {
	f.Add(pipeWAV(10))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVE"))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVEfmt \xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := fixWAVSizes(append([]byte(nil), b...))
		if err != nil {
			return
		}
		if int(binary.LittleEndian.Uint32(out[4:8])) != len(out)-8 {
			t.Fatal("RIFF size not fixed")
		}
	})
}
