package config

// Provenance configures how the gateway marks and signs what it sends
// (docs/provenance.md).
type Provenance struct {
	// Gateway is the gateway's identity written into every mark and
	// signed record (default: the host name). Instances sharing a store
	// should share it.
	Gateway string `yaml:"gateway"`
	// KeyEnv names an environment variable holding the base64 32-byte
	// seed of the Ed25519 key that signs provenance records.
	KeyEnv string `yaml:"key_env"`
	// KeyFile is a file holding that seed; created (0600) when missing.
	// Default: provenance.key beside the database.
	KeyFile string `yaml:"key_file"`
	// Fingerprints turns on the acoustic fingerprint index behind POST
	// /v1/provenance/identify (default off): fingerprinting costs about
	// 1.75 ms of CPU per second of audio, some eight times what relaying
	// the clip costs (docs/provenance.md).
	Fingerprints bool `yaml:"fingerprints"`
	// RotateKey accepts a signing key other than the one the store
	// records (which a start otherwise refuses) and records it: set it
	// for the one start that changes the key.
	RotateKey bool `yaml:"rotate_key"`
}

// OrgProvenance is an organization's provenance settings.
type OrgProvenance struct {
	// Mark writes the machine-readable "synthetic" mark into the
	// organization's audio (default true). Turning it off may leave the
	// deployment short of the EU AI Act's Article 50(2): see
	// docs/provenance.md.
	Mark *bool `yaml:"mark"`
	// Consent says whether a voice made from uploaded media needs a
	// consent attestation: "required" (default) or "optional".
	Consent string `yaml:"consent"`
	// Records signs a provenance record of each answer (default true).
	// Off, the organization's answers are neither hashed nor signed (the
	// mark stays, as Article 50(2) asks): the SHA-256 and Ed25519
	// signature are about a third of the relay's CPU on a short clip.
	Records *bool `yaml:"records"`
}

// Consent settings of OrgProvenance.
const (
	ConsentRequired = "required"
	ConsentOptional = "optional"
)

// MarkOn reports whether marking is on (the default).
func (p *OrgProvenance) MarkOn() bool { return p.Mark == nil || *p.Mark }

// RecordsOn reports whether answers get a signed record (the default).
func (p *OrgProvenance) RecordsOn() bool { return p.Records == nil || *p.Records }

// ConsentRequiredOn reports whether a cloned voice needs consent.
func (p *OrgProvenance) ConsentRequiredOn() bool { return p.Consent != ConsentOptional }

// validateProvenance checks each organization's provenance block.
func (c *Config) validateProvenance(bad report) {
	if c.Provenance.KeyEnv != "" && c.Provenance.KeyFile != "" {
		bad("provenance.key_file", "name either key_env or key_file, not both")
	}
	for _, name := range sortedKeys(c.Orgs) {
		o := c.Orgs[name]
		if o == nil {
			continue
		}
		switch o.Provenance.Consent {
		case "", ConsentRequired, ConsentOptional:
		default:
			bad("orgs."+name+".provenance.consent", "must be %q or %q, not %q", ConsentRequired, ConsentOptional, o.Provenance.Consent)
		}
	}
}
