package email

import (
	"strings"
	"testing"
)

func TestParseAuthResults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		servID   string
		want     []string // "method=result prop=value…" per result, props sorted as written below
	}{
		{"gmail",
			"mx.google.com;\r\n       dkim=pass header.i=@example.org header.s=20230601 header.b=Ab1+Cd2;\r\n       spf=pass (google.com: domain of owner@example.org designates 2a00:1450::1 as permitted sender) smtp.mailfrom=owner@example.org;\r\n       dmarc=pass (p=NONE sp=NONE dis=NONE) header.from=example.org",
			"mx.google.com",
			[]string{"dkim=pass header.i=@example.org", "spf=pass smtp.mailfrom=owner@example.org", "dmarc=pass header.from=example.org"}},
		{"rspamd",
			"mx.example.org;\n\tdkim=pass header.d=example.org header.s=dkim header.b=\"Xy1; 2\";\n\tdmarc=pass (policy=reject) header.from=example.org;\n\tspf=pass (mx.example.org: domain of \"owner@example.org\" designates 192.0.2.1 as permitted sender) smtp.mailfrom=owner@example.org",
			"mx.example.org",
			[]string{"dkim=pass header.d=example.org", "dmarc=pass header.from=example.org", "spf=pass smtp.mailfrom=owner@example.org"}},
		{"version and none", "mx.example.org 1; none", "mx.example.org", nil},
		{"missing semicolons", "mx.example.org; dkim=pass header.d=example.org spf=fail smtp.mailfrom=evil.example", "mx.example.org",
			[]string{"dkim=pass header.d=example.org", "spf=fail smtp.mailfrom=evil.example"}},
		{"spaces around equals", "mx.example.org; dkim = pass header.d = example.org", "mx.example.org", []string{"dkim=pass header.d=example.org"}},
		{"method version and reason", "mx.example.org; dkim/1=fail reason=\"signature verification failed\" header.d=example.org", "mx.example.org",
			[]string{"dkim=fail header.d=example.org"}},
		{"nested comment", "mx.example.org (a (nested) comment); spf=pass (x (y) z) smtp.mailfrom=example.org", "mx.example.org",
			[]string{"spf=pass smtp.mailfrom=example.org"}},
		{"upper case", "MX.Example.ORG; DKIM=PASS header.d=Example.org", "mx.example.org", []string{"dkim=pass header.d=Example.org"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ar, err := ParseAuthResults(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if ar.ServID != c.servID {
				t.Errorf("servID = %q, want %q", ar.ServID, c.servID)
			}
			if len(ar.Results) != len(c.want) {
				t.Fatalf("results = %+v, want %v", ar.Results, c.want)
			}
			for i, w := range c.want {
				f := strings.Fields(w)
				r := ar.Results[i]
				if r.Method+"="+r.Result != f[0] {
					t.Errorf("result %d = %s=%s, want %s", i, r.Method, r.Result, f[0])
				}
				for _, p := range f[1:] {
					k, v, _ := strings.Cut(p, "=")
					if r.Props[k] != v {
						t.Errorf("result %d %s = %q, want %q", i, k, r.Props[k], v)
					}
				}
			}
		})
	}
}

func TestParseAuthResultsMalformed(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "   ", "; dkim=pass", "dkim=pass header.d=example.org", "mx (unclosed comment; dkim=pass", `mx; dkim="pass`} {
		if ar, err := ParseAuthResults(in); err == nil {
			t.Errorf("ParseAuthResults(%q) = %+v, want an error", in, ar)
		}
	}
	many := "mx;" + strings.Repeat(" dkim=pass", maxAuthResults+1)
	if _, err := ParseAuthResults(many); err == nil {
		t.Error("no bound on the number of results")
	}
}

func TestAuthVerdict(t *testing.T) {
	t.Parallel()
	const id = "mx.example.org"
	dkimOnly := []string{"dkim"}
	def := []string{"dkim", "dmarc"}
	all := []string{"dkim", "dmarc", "spf"}
	cases := []struct {
		name    string
		headers []string
		methods []string
		from    string
		want    bool
		why     string
	}{
		{"dkim pass", []string{id + "; dkim=pass header.d=example.org"}, def, "example.org", true, "dkim=pass"},
		{"dkim by parent domain", []string{id + "; dkim=pass header.d=example.org"}, def, "mail.example.org", true, ""},
		{"dkim by a subdomain is not the parent", []string{id + "; dkim=pass header.d=mail.example.org"}, def, "example.org", false, ""},
		{"dkim via header.i", []string{id + "; dkim=pass header.i=@example.org"}, def, "example.org", true, ""},
		{"dkim of another domain", []string{id + "; dkim=pass header.d=mailer.example.net"}, def, "example.org", false, "no dkim/dmarc pass"},
		{"dkim lookalike domain", []string{id + "; dkim=pass header.d=evilexample.org"}, def, "example.org", false, ""},
		{"dmarc pass backed by spf", []string{id + "; dkim=none; spf=pass smtp.mailfrom=bounce.example.org; dmarc=pass header.from=example.org"}, def, "example.org", true, "dmarc=pass"},
		{"dmarc pass with nothing behind it", []string{id + "; dmarc=pass header.from=example.org"}, def, "example.org", false, "without a DKIM or SPF pass"},
		{"dmarc fail refuses despite dkim", []string{id + "; dkim=pass header.d=example.org; dmarc=fail header.from=example.org"}, def, "example.org", false, "dmarc=fail"},
		{"spf not enabled", []string{id + "; spf=pass smtp.mailfrom=owner@example.org"}, def, "example.org", false, ""},
		{"spf enabled", []string{id + "; spf=pass smtp.mailfrom=owner@example.org"}, all, "example.org", true, "spf=pass"},
		{"spf of the envelope only", []string{id + "; spf=pass smtp.mailfrom=evil.example"}, all, "example.org", false, ""},
		{"other server's claim", []string{"mx.evil.example; dkim=pass header.d=example.org"}, def, "example.org", false, "no Authentication-Results from mx.example.org"},
		{"lookalike servid", []string{"mx.example.org.evil.example; dkim=pass header.d=example.org"}, def, "example.org", false, ""},
		{"planted pass collides with none", []string{id + "; dkim=none", id + "; dkim=pass header.d=example.org"}, dkimOnly, "example.org", false, "dkim=none"},
		{"planted pass collides with fail", []string{id + "; dkim=pass header.d=example.org", id + "; dkim=fail header.d=example.org"}, dkimOnly, "example.org", false, "dkim=fail"},
		{"unrelated failing signature is fine", []string{id + "; dkim=pass header.d=example.org; dkim=fail header.d=list.example.net"}, dkimOnly, "example.org", true, ""},
		{"milters with one header each", []string{id + "; spf=pass smtp.mailfrom=owner@example.org", id + "; dkim=pass header.d=example.org", id + "; dmarc=pass header.from=example.org"}, def, "example.org", true, ""},
		{"temperror is no pass", []string{id + "; dkim=temperror header.d=example.org"}, def, "example.org", false, "dkim=temperror"},
		{"case-insensitive", []string{"MX.EXAMPLE.ORG; DKIM=Pass header.d=EXAMPLE.ORG."}, def, "Example.Org", true, ""},
		{"empty from domain", []string{id + "; dkim=pass header.d=example.org"}, def, "", false, ""},
		{"garbage header", []string{"(((", id + "; dkim=pass header.d=example.org"}, def, "example.org", true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ok, why := AuthVerdict(c.headers, id, c.methods, c.from)
			if ok != c.want || !strings.Contains(why, c.why) {
				t.Errorf("AuthVerdict = %v %q, want %v containing %q", ok, why, c.want, c.why)
			}
		})
	}
}

func TestTagMatches(t *testing.T) {
	t.Parallel()
	const tag = "Q7tX2mVb9KpL4sWz"
	for addr, want := range map[string]bool{
		"hestia+Q7tX2mVb9KpL4sWz@example.org":  true,
		"HESTIA+q7tx2mvb9kpl4swz@Example.org":  true, // servers may fold case
		"hestia+Q7tX2mVb9KpL4sW@example.org":   false,
		"hestia+Q7tX2mVb9KpL4sWzz@example.org": false,
		"hestia@example.org":                   false,
		"hestia+Q7tX2mVb9KpL4sWz@example.net":  false,
		"other+Q7tX2mVb9KpL4sWz@example.org":   false,
		"hestia+@example.org":                  false,
		"":                                     false,
	} {
		if got := tagMatches(addr, "hestia", "example.org", tag); got != want {
			t.Errorf("tagMatches(%q) = %v, want %v", addr, got, want)
		}
	}
	if tagMatches("hestia+@example.org", "hestia", "example.org", "") {
		t.Error("an empty tag matched")
	}
	if !tagMatches("me+hestia+Q7tX2mVb9KpL4sWz@example.org", "me+hestia", "example.org", tag) {
		t.Error("a tag on a tagged address did not match")
	}
}

func FuzzParseAuthResults(f *testing.F) {
	fuzzSeeds(f, "authres")
	f.Fuzz(func(t *testing.T, s string) {
		ar, err := ParseAuthResults(s)
		if err != nil {
			return
		}
		if ar.ServID == "" || strings.ContainsAny(ar.ServID, " \t;") || len(ar.Results) > maxAuthResults {
			t.Fatalf("ParseAuthResults(%q) = %+v", s, ar)
		}
		AuthVerdict([]string{s}, ar.ServID, []string{"dkim", "dmarc", "spf"}, "example.org")
	})
}
