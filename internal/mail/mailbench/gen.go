// Package mailbench generates realistic synthetic mail corpora and holds
// the hand-run mail benchmarks (import throughput, peak RSS, search
// latency, and the same workload on Debian's notmuch for comparison).
//
// Nothing here runs in `make test`: the benchmark test skips unless
// HESTIA_MAIL_BENCH is set to a message count.
package mailbench

import (
	"encoding/base64"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"time"
)

var common = strings.Fields(`the of and to a in is you that it he was for on are as with his they at be this have from or one had by word but not what all were we when your can said there use an each which she do how their if will up other about out many then them these so some her would make like him into time has look two more write go see number no way could people my than first water been call who oil its now find long down day did get come made may part over new sound take only little work know place year live me back give most very after thing our just name good sentence man think say great where help through much before line right too mean old any same tell boy follow came want show also around form three small set put end does another well large must big even such because turn here why ask went men read need land different home us move try kind hand picture again change off play spell air away animal house point page letter mother answer found study still learn should world`)

var topical = strings.Fields(`invoice payment contract renewal solar panel installer certification photovoltaic energy meter tariff
mortgage bank statement tax property accountant deadline receipt refund insurance policy claim doctor appointment
school teacher meeting agenda minutes budget forecast quarterly report release deploy server outage incident
database migration kernel patch review merge branch compile benchmark latency throughput conference travel flight
hotel booking train ticket passport visa dinner lunch birthday party wedding gift holiday vacation apartment rent
landlord repair plumber electrician garden bicycle football concert museum library subscription newsletter`)

var first = strings.Fields(`marco anna luca giulia sara paolo maria john jane alex chris sam robin kim lee max nora omar ines yuki`)
var last = strings.Fields(`rossi bianchi smith jones garcia muller dubois tanaka kim novak silva costa berg weber moreau`)
var domains = strings.Fields(`example.org example.com solar.it studio.it polimi.it bank.example mail.example lists.example acme.test corp.test`)

// Options shape a corpus.
type Options struct {
	Messages int
	Seed     int64
	// Start is the oldest date; messages spread over Years years.
	Start time.Time
	Years int
}

type msgMeta struct {
	id, subject string
	refs        []string
}

// Generate writes a Maildir++ tree under dir (INBOX, .Sent, .Archive,
// .Lists.golang) and returns the number of files written. About a third of
// the messages are replies in threads; a few carry small attachments.
func Generate(dir string, o Options) (int, error) {
	if o.Years <= 0 {
		o.Years = 3
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	r := rand.New(rand.NewSource(o.Seed))
	boxes := []struct {
		name   string
		weight int
	}{{"", 70}, {".Sent", 15}, {".Archive", 10}, {".Lists.golang", 5}}
	for _, b := range boxes {
		for _, sub := range []string{"cur", "new", "tmp"} {
			if err := os.MkdirAll(filepath.Join(dir, b.name, sub), 0o755); err != nil {
				return 0, err
			}
		}
	}
	people := make([]string, 500)
	for i := range people {
		f, l := first[r.Intn(len(first))], last[r.Intn(len(last))]
		people[i] = fmt.Sprintf("%s %s <%s.%s%d@%s>", title(f), title(l), f, l, i, domains[r.Intn(len(domains))])
	}
	me := "Me Myself <me@home.example>"
	span := time.Duration(o.Years) * 365 * 24 * time.Hour
	var recent []msgMeta
	// A long-tailed vocabulary like real mail: a few hundred function
	// words carry most tokens, 20,000 rarer words the rest, and topical
	// words (what people search for) appear in a few percent of messages.
	vocab := makeVocab(r, 20000)
	word := func() string {
		switch x := r.Intn(100); {
		case x < 3:
			return topical[r.Intn(len(topical))]
		case x < 60:
			return common[int(float64(len(common))*r.Float64()*r.Float64())]
		default:
			f := r.Float64()
			return vocab[int(float64(len(vocab))*f*f*f)]
		}
	}
	sentence := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = word()
		}
		s := strings.Join(ws, " ")
		return strings.ToUpper(s[:1]) + s[1:] + "."
	}
	var b strings.Builder
	for i := 0; i < o.Messages; i++ {
		date := o.Start.Add(time.Duration(float64(span) * float64(i) / float64(o.Messages))).Add(time.Duration(r.Intn(3600)) * time.Second)
		box, w := "", r.Intn(100)
		for _, bx := range boxes {
			if w < bx.weight {
				box = bx.name
				break
			}
			w -= bx.weight
		}
		from, to := people[r.Intn(len(people))], me
		if box == ".Sent" {
			from, to = me, people[r.Intn(len(people))]
		}
		id := fmt.Sprintf("%d.%d@gen.example", o.Seed, i)
		subject := title(sentence(2 + r.Intn(5)))
		subject = strings.TrimSuffix(subject, ".")
		var refs []string
		if len(recent) > 0 && r.Intn(3) == 0 {
			p := recent[r.Intn(len(recent))]
			subject = "Re: " + strings.TrimPrefix(p.subject, "Re: ")
			refs = append(append([]string(nil), p.refs...), p.id)
			if len(refs) > 10 {
				refs = refs[len(refs)-10:]
			}
		}
		b.Reset()
		fmt.Fprintf(&b, "Return-Path: <x@x>\nMessage-ID: <%s>\nDate: %s\nFrom: %s\nTo: %s\nSubject: %s\nMIME-Version: 1.0\n", id, date.Format(time.RFC1123Z), from, to, subject)
		if len(refs) > 0 {
			fmt.Fprintf(&b, "In-Reply-To: <%s>\nReferences: <%s>\n", refs[len(refs)-1], strings.Join(refs, "> <"))
		}
		var body strings.Builder
		for p := 0; p < 2+r.Intn(6); p++ {
			for s := 0; s < 2+r.Intn(4); s++ {
				body.WriteString(sentence(6 + r.Intn(12)))
				body.WriteByte(' ')
			}
			body.WriteString("\n\n")
		}
		if r.Intn(20) == 0 {
			att := make([]byte, 1024+r.Intn(16*1024))
			r.Read(att)
			fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=\"b%d\"\n\n--b%d\nContent-Type: text/plain; charset=utf-8\n\n%s\n--b%d\nContent-Type: application/pdf; name=\"doc%d.pdf\"\nContent-Disposition: attachment; filename=\"doc%d.pdf\"\nContent-Transfer-Encoding: base64\n\n%s\n--b%d--\n",
				i, i, body.String(), i, i, i, wrap(base64.StdEncoding.EncodeToString(att)), i)
		} else {
			fmt.Fprintf(&b, "Content-Type: text/plain; charset=utf-8\n\n%s", body.String())
		}
		flags := "S"
		if r.Intn(5) == 0 {
			flags = ""
		}
		name := fmt.Sprintf("%d.M%dP1.gen:2,%s", date.Unix(), i, flags)
		p := filepath.Join(dir, box, "cur", name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			return i, err
		}
		os.Chtimes(p, date, date)
		recent = append(recent, msgMeta{id: id, subject: subject, refs: refs})
		if len(recent) > 200 {
			recent = recent[1:]
		}
	}
	return o.Messages, nil
}

var syllables = strings.Fields(`ka ri mo te lu sa vi ne po da fe gi ho ju ly mi no pa qu ro si tu ve wo xa ze bra cle dri fro gla pre sta tri`)

func makeVocab(r *rand.Rand, n int) []string {
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for s := 0; s < 2+r.Intn(3); s++ {
			b.WriteString(syllables[r.Intn(len(syllables))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

func wrap(s string) string {
	var b strings.Builder
	for len(s) > 76 {
		b.WriteString(s[:76])
		b.WriteByte('\n')
		s = s[76:]
	}
	b.WriteString(s)
	return b.String()
}

// title upper-cases the first letter of each word, as strings.Title did
// for the ASCII words the generator uses (the corpus must not change
// between versions: earlier figures were measured on it).
func title(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' && (i == 0 || !isWordByte(b[i-1])) {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c >= 0x80
}
