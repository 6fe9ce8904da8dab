package config

import (
	"reflect"
	"strings"
)

// Parse decodes a candidate config.toml, applies the environment and
// validates it exactly as Load does, so an editor (the Settings page) can
// refuse a change with the same error the CLI would print at startup.
func Parse(data []byte, env Env) (Config, error) {
	cfg := Default()
	if err := decodeFile(data, &cfg); err != nil {
		return Config{}, err
	}
	if err := applyEnv(&cfg, env); err != nil {
		return Config{}, err
	}
	cfg.OAuth.applyPackagedClients(env)
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// EnvOverrides maps each dotted key that the environment sets to the
// variable setting it: such keys win over config.toml.
func EnvOverrides(env Env) map[string]string {
	out := map[string]string{}
	cfg := Default()
	walkFields(reflect.ValueOf(&cfg).Elem(), "", func(key string, f reflect.StructField, _ reflect.Value) {
		names := []string{"HESTIA_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))}
		if alias := f.Tag.Get("env"); alias != "" {
			names = append(names, alias)
		}
		for _, n := range names {
			if env(n) != "" {
				out[key] = n
			}
		}
	})
	return out
}
