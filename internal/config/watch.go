package config

import (
	"net/url"
	"time"
)

// WatchConfig configures the watch engine (internal/watch).
type WatchConfig struct {
	// Interval between poll passes.
	Interval Duration `toml:"interval"`
	// TrainBaseURL is the ViaggiaTreno JSON root (a compatible proxy or a
	// test server); empty uses the public endpoint.
	TrainBaseURL string `toml:"train_base_url" env:"VIAGGIATRENO_BASE_URL"`
	// URLAllowPrivate lets url watches fetch loopback and private
	// addresses (a device on the user's own network).
	URLAllowPrivate bool `toml:"url_allow_private"`
}

func defaultWatch() WatchConfig { return WatchConfig{Interval: Duration(45 * time.Second)} }

func (w WatchConfig) validate() []error {
	var errs []error
	if w.Interval.D() < time.Second || w.Interval.D() > time.Hour {
		errs = append(errs, &Error{Key: "watch.interval", Value: w.Interval.D().String(), Allowed: "a duration between 1s and 1h"})
	}
	if w.TrainBaseURL != "" {
		if u, err := url.Parse(w.TrainBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, &Error{Key: "watch.train_base_url", Value: w.TrainBaseURL, Allowed: "an http(s) URL"})
		}
	}
	return errs
}
