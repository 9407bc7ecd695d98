package loadrun

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/forgeload/forgeload/internal/pkg/load/spec"
)

// SpecVersion is the version of the wire form of a distributed load spec.
// Version 1 shipped the config's text and inline keys for every worker to
// parse again; version 2 ships the validated config itself; version 3 is
// the same for a mixed-protocol config (spec.Config.Mixed), so that a
// member that predates mixed runs refuses it, saying so, rather than send
// its endpoints as HTTP. Other configs still travel as version 2, which
// this runner reads too.
const SpecVersion = 3

// specVersionOneProtocol is the version of a config of one protocol.
const specVersionOneProtocol = 2

// MaxSpecBytes bounds the encoded spec [DecodeSpec] accepts.
const MaxSpecBytes = 8 << 20

// wireSpec is the load spec as the coordinator ships it in
// cluster.Run.Spec: the validated config, its overrides applied, under the
// name it has in errors.
type wireSpec struct {
	Version int             `json:"v"`
	Name    string          `json:"name,omitempty"`
	Config  json.RawMessage `json:"config"`
}

// EncodeSpec encodes cfg, which must have passed Validate, for the workers
// of a distributed test. The requests of its har_file travel as endpoints
// and its feeder's rows (read by build.LoadFeeder) as data, so no worker
// reads a file of its own.
func EncodeSpec(cfg *spec.Config) ([]byte, error) {
	c := *cfg
	if c.HARFile != "" {
		c.Endpoints, c.HARFile, c.HARFilter = cfg.Mix(), "", ""
	}
	body, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encode distributed load spec %s: %w", cfg.Source(), err)
	}
	v := specVersionOneProtocol
	if cfg.Mixed() {
		v = SpecVersion
	}
	b, err := json.Marshal(wireSpec{Version: v, Name: cfg.Source(), Config: body})
	if err != nil {
		return nil, fmt.Errorf("encode distributed load spec %s: %w", cfg.Source(), err)
	}
	return b, nil
}

// DecodeSpec decodes a spec written by [EncodeSpec]. It refuses a spec of
// another version, or with fields this runner does not know, saying that
// the cluster's members run different forgeload versions; and a spec that
// would make this host read its own files (body_file, har_file, a feeder
// without its rows).
func DecodeSpec(b []byte) (*spec.Config, error) {
	if len(b) > MaxSpecBytes {
		return nil, fmt.Errorf("decode distributed load spec: %d bytes exceeds the %d byte limit", len(b), MaxSpecBytes)
	}
	var head struct {
		Version int `json:"v"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("decode distributed load spec: %w: the coordinator and this runner may run different forgeload versions", err)
	}
	if head.Version != SpecVersion && head.Version != specVersionOneProtocol {
		return nil, fmt.Errorf("decode distributed load spec: version %d, this runner understands %d and %d: run the same forgeload version on every cluster member", head.Version, specVersionOneProtocol, SpecVersion)
	}
	var w wireSpec
	if err := strict(b, &w); err != nil {
		return nil, fmt.Errorf("decode distributed load spec: %w: the coordinator and this runner may run different forgeload versions", err)
	}
	name := w.Name
	if name == "" {
		name = "with"
	}
	cfg, err := spec.Parse(name, []byte("{}"))
	if err != nil {
		return nil, err
	}
	if len(w.Config) == 0 {
		return nil, fmt.Errorf("decode distributed load spec %s: no config: the coordinator and this runner may run different forgeload versions", name)
	}
	if err := strict(w.Config, cfg); err != nil {
		return nil, fmt.Errorf("decode distributed load spec %s: %w: the coordinator and this runner may run different forgeload versions", name, err)
	}
	if cfg.Feeder != nil && cfg.Feeder.Data == nil {
		return nil, fmt.Errorf("decode distributed load spec: the config has a feeder but the coordinator shipped no rows: run the same forgeload version on every cluster member")
	}
	if cfg.HARFile != "" {
		return nil, fmt.Errorf("decode distributed load spec %s: it names a har_file, which a worker must not read: the coordinator ships its requests as endpoints", name)
	}
	for n, e := range cfg.Mix() {
		// The coordinator refuses body files; a spec that names one anyway
		// must not make this host read its own files.
		if e.BodyFile != "" {
			return nil, fmt.Errorf("decode distributed load spec: endpoint %d names a body_file, which a distributed test cannot use: put the body inline with the body key", n+1)
		}
	}
	return cfg, nil
}

// strict decodes one JSON value into v, refusing unknown fields and
// trailing data.
func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the spec")
	}
	return nil
}
