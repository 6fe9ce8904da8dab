package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// TrainAdapter watches one Italian train run through ViaggiaTreno's JSON
// endpoint andamentoTreno/{originId}/{number}/{serviceDayMs}. The ref is
// "originId/number/serviceDayMs" (e.g. S01700/9544/1767567600000). The
// response is normalized into a TrainSnapshot; events compare two of them.
type TrainAdapter struct {
	// BaseURL is the endpoint root (default the public ViaggiaTreno
	// resteasy URL); tests point it at a fake server.
	BaseURL string
	Client  *http.Client
	Now     func() time.Time
}

// DefaultTrainBaseURL is ViaggiaTreno's public JSON root.
const DefaultTrainBaseURL = "http://www.viaggiatreno.it/infomobilita/resteasy/viaggiatreno"

var trainRefRE = lazyre.New(`^(S\d{5})/(\d{1,6})/(\d{13})$`)

// TrainSnapshot is the normalized state of a run.
type TrainSnapshot struct {
	Number      string      `json:"number"`
	Origin      string      `json:"origin"`
	Destination string      `json:"destination"`
	Cancelled   bool        `json:"cancelled"`
	Departed    bool        `json:"departed"`
	Arrived     bool        `json:"arrived"`
	DelayMin    int         `json:"delay_min"`
	ScheduledMS int64       `json:"scheduled_arrival_ms,omitempty"`
	EstimatedMS int64       `json:"estimated_arrival_ms,omitempty"`
	LastSeen    string      `json:"last_seen_station,omitempty"`
	Stops       []TrainStop `json:"stops"`
	Source      string      `json:"source"`
}

// TrainStop is one stop of the run.
type TrainStop struct {
	ID                string `json:"id"`
	Name              string `json:"name"`
	Index             int    `json:"index"`
	Position          int    `json:"position_relative_to_destination"`
	ScheduledArrival  int64  `json:"scheduled_arrival_ms,omitempty"`
	ScheduledDepart   int64  `json:"scheduled_departure_ms,omitempty"`
	ActualArrival     int64  `json:"actual_arrival_ms,omitempty"`
	ActualDeparture   int64  `json:"actual_departure_ms,omitempty"`
	PlatformScheduled string `json:"platform_scheduled,omitempty"`
	PlatformActual    string `json:"platform_actual,omitempty"`
	Cancelled         bool   `json:"cancelled,omitempty"`
}

// vtRun is the part of ViaggiaTreno's andamentoTreno answer we read.
type vtRun struct {
	NumeroTreno               json.Number `json:"numeroTreno"`
	Origine                   string      `json:"origine"`
	Destinazione              string      `json:"destinazione"`
	Ritardo                   *int        `json:"ritardo"`
	Provvedimento             int         `json:"provvedimento"`
	StazioneUltimoRilevamento string      `json:"stazioneUltimoRilevamento"`
	Fermate                   []vtStop    `json:"fermate"`
}

type vtStop struct {
	Stazione                              string `json:"stazione"`
	ID                                    string `json:"id"`
	ArrivoTeorico                         *int64 `json:"arrivo_teorico"`
	PartenzaTeorica                       *int64 `json:"partenza_teorica"`
	ArrivoReale                           *int64 `json:"arrivoReale"`
	PartenzaReale                         *int64 `json:"partenzaReale"`
	BinarioProgrammatoArrivoDescrizione   string `json:"binarioProgrammatoArrivoDescrizione"`
	BinarioEffettivoArrivoDescrizione     string `json:"binarioEffettivoArrivoDescrizione"`
	BinarioProgrammatoPartenzaDescrizione string `json:"binarioProgrammatoPartenzaDescrizione"`
	BinarioEffettivoPartenzaDescrizione   string `json:"binarioEffettivoPartenzaDescrizione"`
	ActualFermataType                     int    `json:"actualFermataType"`
}

// Name implements Adapter.
func (*TrainAdapter) Name() string { return "train" }

// EventTypes implements Adapter.
func (*TrainAdapter) EventTypes() []string {
	return []string{"train.departed", "train.arrived", "train.cancelled", "train.delay_changed",
		"train.platform_announced", "train.platform_changed", "train.stop_arrived", "train.stop_departed"}
}

// Validate implements Adapter.
func (*TrainAdapter) Validate(ref string) error {
	if !trainRefRE.MatchString(ref) {
		return fmt.Errorf("%q is not originId/number/serviceDayMs (e.g. S01700/9544/1767567600000)", ref)
	}
	return nil
}

// Snapshot implements Adapter.
func (t *TrainAdapter) Snapshot(ctx context.Context, ref string) (json.RawMessage, error) {
	if err := t.Validate(ref); err != nil {
		return nil, err
	}
	base := t.BaseURL
	if base == "" {
		base = DefaultTrainBaseURL
	}
	client := t.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/andamentoTreno/"+ref, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ViaggiaTreno: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return nil, errors.New("ViaggiaTreno has no live data for this train (204)")
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ViaggiaTreno answered %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 2<<20))
	if err != nil {
		return nil, fmt.Errorf("ViaggiaTreno: %w", err)
	}
	snap, err := ParseTrain(body)
	if err != nil {
		return nil, err
	}
	return json.Marshal(snap)
}

// ParseTrain normalizes an andamentoTreno answer.
func ParseTrain(body []byte) (TrainSnapshot, error) {
	var r vtRun
	if err := json.Unmarshal(body, &r); err != nil {
		return TrainSnapshot{}, fmt.Errorf("ViaggiaTreno answer is not the andamentoTreno shape: %w", err)
	}
	if r.NumeroTreno == "" || len(r.Fermate) == 0 {
		return TrainSnapshot{}, errors.New("ViaggiaTreno answer has no train number or no stops")
	}
	if len(r.Fermate) > 200 {
		return TrainSnapshot{}, errors.New("ViaggiaTreno answer has more than 200 stops")
	}
	s := TrainSnapshot{Number: r.NumeroTreno.String(), Origin: r.Origine, Destination: r.Destinazione, LastSeen: r.StazioneUltimoRilevamento, Source: "ViaggiaTreno"}
	if r.Ritardo != nil {
		s.DelayMin = *r.Ritardo
	}
	// provvedimento 1 is a cancelled run (ViaggiaTreno's code); a stop of
	// type 3 is a cancelled stop.
	s.Cancelled = r.Provvedimento == 1
	last := len(r.Fermate) - 1
	v := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	for i, f := range r.Fermate {
		st := TrainStop{ID: f.ID, Name: f.Stazione, Index: i, Position: i - last,
			ScheduledArrival: v(f.ArrivoTeorico), ScheduledDepart: v(f.PartenzaTeorica), ActualArrival: v(f.ArrivoReale), ActualDeparture: v(f.PartenzaReale),
			Cancelled: f.ActualFermataType == 3}
		st.PlatformScheduled = strings.TrimSpace(firstNonEmpty(f.BinarioProgrammatoPartenzaDescrizione, f.BinarioProgrammatoArrivoDescrizione))
		st.PlatformActual = strings.TrimSpace(firstNonEmpty(f.BinarioEffettivoPartenzaDescrizione, f.BinarioEffettivoArrivoDescrizione))
		s.Stops = append(s.Stops, st)
	}
	s.Departed = s.Stops[0].ActualDeparture > 0
	s.Arrived = s.Stops[last].ActualArrival > 0
	s.ScheduledMS = s.Stops[last].ScheduledArrival
	if s.Arrived {
		s.EstimatedMS = s.Stops[last].ActualArrival
	} else if s.ScheduledMS > 0 {
		s.EstimatedMS = s.ScheduledMS + int64(s.DelayMin)*60_000
	}
	return s, nil
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if strings.TrimSpace(x) != "" {
			return x
		}
	}
	return ""
}

func hhmm(msec int64) string {
	if msec == 0 {
		return "?"
	}
	rome, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		rome = time.UTC
	}
	return time.UnixMilli(msec).In(rome).Format("15:04")
}

// Events implements Adapter.
func (*TrainAdapter) Events(prev, cur json.RawMessage) ([]Event, error) {
	var a, b TrainSnapshot
	if err := json.Unmarshal(prev, &a); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(cur, &b); err != nil {
		return nil, err
	}
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{"train": b.Number, "origin": b.Origin, "destination": b.Destination, "delay_min": b.DelayMin, "estimated_arrival_ms": b.EstimatedMS}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	name := "Train " + b.Number
	var out []Event
	if !a.Cancelled && b.Cancelled {
		out = append(out, Event{Type: "train.cancelled", Key: "cancelled", Data: base(nil), Text: name + " is cancelled."})
	}
	if !a.Departed && b.Departed {
		out = append(out, Event{Type: "train.departed", Key: "departed", Data: base(nil), Text: fmt.Sprintf("%s left %s at %s.", name, b.Origin, hhmm(b.Stops[0].ActualDeparture))})
	}
	if a.DelayMin != b.DelayMin && !b.Arrived {
		out = append(out, Event{Type: "train.delay_changed", Key: fmt.Sprintf("delay:%d", b.DelayMin), Data: base(map[string]any{"previous_delay_min": a.DelayMin}),
			Text: fmt.Sprintf("%s is now %d min late (was %d); arrival in %s expected at %s.", name, b.DelayMin, a.DelayMin, b.Destination, hhmm(b.EstimatedMS))})
	}
	prevStop := map[string]TrainStop{}
	for _, s := range a.Stops {
		prevStop[s.ID] = s
	}
	for _, s := range b.Stops {
		p, ok := prevStop[s.ID]
		if !ok {
			continue
		}
		stop := map[string]any{"station": s.Name, "station_id": s.ID, "index": s.Index, "position_relative_to_destination": s.Position}
		if p.PlatformActual == "" && s.PlatformActual != "" {
			out = append(out, Event{Type: "train.platform_announced", Key: "platform:" + s.ID + ":" + s.PlatformActual, Data: base(mergeMap(stop, map[string]any{"platform": s.PlatformActual})),
				Text: fmt.Sprintf("%s: platform %s at %s.", name, s.PlatformActual, s.Name)})
		} else if p.PlatformActual != "" && s.PlatformActual != "" && p.PlatformActual != s.PlatformActual {
			out = append(out, Event{Type: "train.platform_changed", Key: "platform:" + s.ID + ":" + s.PlatformActual, Data: base(mergeMap(stop, map[string]any{"platform": s.PlatformActual, "previous_platform": p.PlatformActual})),
				Text: fmt.Sprintf("%s: platform changed to %s at %s (was %s).", name, s.PlatformActual, s.Name, p.PlatformActual)})
		}
		if p.ActualArrival == 0 && s.ActualArrival > 0 && s.Index > 0 {
			out = append(out, Event{Type: "train.stop_arrived", Key: fmt.Sprintf("arr:%s:%d", s.ID, s.ActualArrival), Data: base(stop),
				Text: fmt.Sprintf("%s arrived at %s at %s.", name, s.Name, hhmm(s.ActualArrival))})
		}
		if p.ActualDeparture == 0 && s.ActualDeparture > 0 && s.Position < 0 {
			out = append(out, Event{Type: "train.stop_departed", Key: fmt.Sprintf("dep:%s:%d", s.ID, s.ActualDeparture), Data: base(stop),
				Text: fmt.Sprintf("%s left %s at %s.", name, s.Name, hhmm(s.ActualDeparture))})
		}
	}
	if !a.Arrived && b.Arrived {
		out = append(out, Event{Type: "train.arrived", Key: "arrived", Data: base(nil), Text: fmt.Sprintf("%s arrived in %s at %s (%d min late).", name, b.Destination, hhmm(b.EstimatedMS), b.DelayMin)})
	}
	return out, nil
}

func mergeMap(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// DefaultExpiry implements Adapter: three hours after the estimated
// arrival (at least one hour from now).
func (t *TrainAdapter) DefaultExpiry(cur json.RawMessage) time.Duration {
	var s TrainSnapshot
	json.Unmarshal(cur, &s)
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	d := time.Until(time.UnixMilli(s.EstimatedMS).Add(3 * time.Hour))
	if s.EstimatedMS > 0 {
		d = time.UnixMilli(s.EstimatedMS).Add(3 * time.Hour).Sub(now())
	}
	return max(d, time.Hour)
}

// Terminal implements Adapter: arrived or cancelled.
func (*TrainAdapter) Terminal(cur json.RawMessage) bool {
	var s TrainSnapshot
	json.Unmarshal(cur, &s)
	return s.Arrived || s.Cancelled
}
