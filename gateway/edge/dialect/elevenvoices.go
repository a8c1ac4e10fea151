package dialect

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/voxgate/voxgate/gateway/problem"
)

// ElevenLabsVoice is a voice as ElevenLabs' voice endpoints describe it
// (VoiceResponseModel): GET /v1/voices lists them, GET /v2/voices
// searches them, GET /v1/voices/{voice_id} returns one. The gateway's
// voices are its voice aliases (category "premade", ElevenLabs'
// default voices) and the organization's saved voices ("cloned", its
// personal ones).
type ElevenLabsVoice struct {
	VoiceID     string            `json:"voice_id"`
	Name        string            `json:"name"`
	Category    string            `json:"category"`
	Labels      map[string]string `json:"labels"`
	Description string            `json:"description,omitempty"`
	// AvailableForTiers and HighQualityBaseModelIDs are required by
	// ElevenLabs' document (and so by its SDKs' parsers); the gateway
	// has neither tiers nor high-quality bases, so both are empty.
	AvailableForTiers       []string `json:"available_for_tiers"`
	HighQualityBaseModelIDs []string `json:"high_quality_base_model_ids"`
	// CreatedAtUnix is a saved voice's creation time; aliases have none
	// (ElevenLabs too omits it for older voices).
	CreatedAtUnix *int64 `json:"created_at_unix,omitempty"`
	IsOwner       *bool  `json:"is_owner,omitempty"`
	// voiceType is the voice_type the voice belongs to ("default" or
	// "personal").
	voiceType string
}

// NewElevenLabsVoice returns a voice with the fields ElevenLabs requires
// set. personal says whether it is the organization's own (a saved
// voice, category "cloned", voice_type "personal") or one of the
// gateway's aliases ("premade", voice_type "default").
func NewElevenLabsVoice(id, name, description string, labels map[string]string, personal bool, createdUnix int64) ElevenLabsVoice {
	v := ElevenLabsVoice{VoiceID: id, Name: name, Description: description, Labels: labels,
		AvailableForTiers: []string{}, HighQualityBaseModelIDs: []string{}, Category: "premade", voiceType: "default"}
	if v.Labels == nil {
		v.Labels = map[string]string{}
	}
	if personal {
		owner := true
		v.Category, v.voiceType, v.IsOwner, v.CreatedAtUnix = "cloned", "personal", &owner, &createdUnix
	}
	return v
}

// ElevenLabsVoices is GET /elevenlabs/v1/voices.
type ElevenLabsVoices struct {
	Voices []ElevenLabsVoice `json:"voices"`
}

// ElevenLabsVoicesPage is GET /elevenlabs/v2/voices
// (GetVoicesV2ResponseModel).
type ElevenLabsVoicesPage struct {
	Voices        []ElevenLabsVoice `json:"voices"`
	HasMore       bool              `json:"has_more"`
	TotalCount    int               `json:"total_count"`
	NextPageToken *string           `json:"next_page_token"`
}

// VoiceSearch is the query of ElevenLabs' GET /v2/voices, parsed.
type VoiceSearch struct {
	Search                   string
	PageSize, Offset         int
	Sort                     string // "", "name" or "created_at_unix"
	Descending               bool
	VoiceType, Category      string
	Gender, Age, Accent      string
	Languages, UseCases, IDs []string
	// none is set by a filter no gateway voice can pass: professional
	// voices' fine_tuning_state, collection_id (the gateway has no
	// collections), high_quality=true.
	none bool
}

// voiceSearchParams are GET /v2/voices' query parameters as ElevenLabs
// documents them. Those about shared library voices
// (min_notice_period_days, include_custom_rates,
// include_live_moderated) narrow nothing here: no gateway voice is
// shared. include_total_count is accepted; total_count is always given.
var voiceSearchParams = map[string]bool{
	"next_page_token": true, "page_size": true, "search": true, "sort": true, "sort_direction": true,
	"voice_type": true, "category": true, "fine_tuning_state": true, "collection_id": true,
	"gender": true, "age": true, "accent": true, "language": true, "use_cases": true, "voice_ids": true,
	"min_notice_period_days": true, "include_custom_rates": true, "include_live_moderated": true,
	"high_quality": true, "include_total_count": true,
}

// voiceTypes are voice_type's values, each with the gateway voices'
// type it keeps ("" keeps none: the gateway has no community or
// workspace-shared voices).
var voiceTypes = map[string]string{
	"personal": "personal", "community": "", "default": "default", "workspace": "",
	"non-default": "personal", "non-community": "personal", "saved": "personal",
}

// maxVoicePage is the most page_size may ask for, as at ElevenLabs.
const maxVoicePage = 100

// ParseVoiceSearch reads the query of GET /v2/voices. A parameter
// ElevenLabs does not document, or a value it would refuse, is a
// validation error naming it. Array parameters (language, use_cases,
// voice_ids) are repeated keys.
func ParseVoiceSearch(q map[string][]string) (VoiceSearch, error) {
	s := VoiceSearch{PageSize: 10}
	var fe []problem.FieldError
	one := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[len(v)-1]
		}
		return ""
	}
	for k := range q {
		if !voiceSearchParams[k] {
			fe = append(fe, problem.Field("unknown query parameter", k))
		}
	}
	if v := one("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxVoicePage {
			fe = append(fe, problem.Field("must be an integer from 1 to 100", "page_size"))
		}
		s.PageSize = n
	}
	if v := one("next_page_token"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fe = append(fe, problem.Field("is not a token this gateway gave; pass next_page_token from the previous page", "next_page_token"))
		}
		s.Offset = n
	}
	switch s.Sort = one("sort"); s.Sort {
	case "", "name", "created_at_unix":
	default:
		fe = append(fe, problem.Field(`must be "created_at_unix" or "name"`, "sort"))
	}
	switch d := one("sort_direction"); d {
	case "asc":
	case "desc":
		s.Descending = true
	case "":
		s.Descending = s.Sort == "created_at_unix" // newest first; names A to Z
	default:
		fe = append(fe, problem.Field(`must be "asc" or "desc"`, "sort_direction"))
	}
	if s.VoiceType = one("voice_type"); s.VoiceType != "" {
		if _, ok := voiceTypes[s.VoiceType]; !ok {
			fe = append(fe, problem.Field("must be one of personal, community, default, workspace, non-default, non-community, saved", "voice_type"))
		}
	}
	switch s.Category = one("category"); s.Category {
	case "", "premade", "cloned", "generated", "professional":
	default:
		fe = append(fe, problem.Field("must be one of premade, cloned, generated, professional", "category"))
	}
	for _, k := range []string{"high_quality", "include_custom_rates", "include_live_moderated", "include_total_count"} {
		if v := one(k); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				fe = append(fe, problem.Field("must be true or false", k))
			}
			if k == "high_quality" && b {
				s.none = true
			}
		}
	}
	if v := one("min_notice_period_days"); v != "" {
		if _, err := strconv.Atoi(v); err != nil {
			fe = append(fe, problem.Field("must be an integer", "min_notice_period_days"))
		}
	}
	if one("fine_tuning_state") != "" || one("collection_id") != "" {
		s.none = true
	}
	s.Gender, s.Age, s.Accent = one("gender"), one("age"), one("accent")
	s.Languages, s.UseCases, s.IDs = q["language"], q["use_cases"], q["voice_ids"]
	if len(s.IDs) > maxVoicePage {
		fe = append(fe, problem.Field("may name at most 100 voices", "voice_ids"))
	}
	s.Search = strings.TrimSpace(one("search"))
	if len(fe) > 0 {
		slices.SortFunc(fe, func(a, b problem.FieldError) int {
			return cmp.Compare(strings.Join(a.Path, "."), strings.Join(b.Path, "."))
		})
		return VoiceSearch{}, problem.Validation(fe...)
	}
	return s, nil
}

// Page filters, sorts and pages voices as ElevenLabs' GET /v2/voices
// does. search looks in the name, description, labels and category,
// ignoring case; gender, age, accent, language and use_cases match the
// label of that name (use_case for use_cases). The token of the next
// page is the offset of its first voice.
func (s VoiceSearch) Page(voices []ElevenLabsVoice) ElevenLabsVoicesPage {
	out := ElevenLabsVoicesPage{Voices: []ElevenLabsVoice{}}
	var kept []ElevenLabsVoice
	for _, v := range voices {
		if s.keeps(v) {
			kept = append(kept, v)
		}
	}
	switch s.Sort {
	case "name":
		slices.SortStableFunc(kept, func(a, b ElevenLabsVoice) int {
			c := cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
			if s.Descending {
				c = -c
			}
			return c
		})
	case "created_at_unix":
		// Voices without a creation time (aliases) come last either way.
		slices.SortStableFunc(kept, func(a, b ElevenLabsVoice) int {
			switch {
			case a.CreatedAtUnix == nil || b.CreatedAtUnix == nil:
				return cmp.Compare(boolInt(a.CreatedAtUnix == nil), boolInt(b.CreatedAtUnix == nil))
			case s.Descending:
				return cmp.Compare(*b.CreatedAtUnix, *a.CreatedAtUnix)
			}
			return cmp.Compare(*a.CreatedAtUnix, *b.CreatedAtUnix)
		})
	}
	out.TotalCount = len(kept)
	if s.Offset < len(kept) {
		end := min(s.Offset+s.PageSize, len(kept))
		out.Voices = append(out.Voices, kept[s.Offset:end]...)
		if end < len(kept) {
			out.HasMore = true
			next := strconv.Itoa(end)
			out.NextPageToken = &next
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s VoiceSearch) keeps(v ElevenLabsVoice) bool {
	if s.none {
		return false
	}
	if s.VoiceType != "" && voiceTypes[s.VoiceType] != v.voiceType {
		return false
	}
	if s.Category != "" && s.Category != v.Category {
		return false
	}
	if len(s.IDs) > 0 && !slices.Contains(s.IDs, v.VoiceID) {
		return false
	}
	label := func(name, want string) bool { return want == "" || strings.EqualFold(v.Labels[name], want) }
	anyLabel := func(name string, want []string) bool {
		return len(want) == 0 || slices.ContainsFunc(want, func(w string) bool { return strings.EqualFold(v.Labels[name], w) })
	}
	if !label("gender", s.Gender) || !label("age", s.Age) || !label("accent", s.Accent) ||
		!anyLabel("language", s.Languages) || !anyLabel("use_case", s.UseCases) {
		return false
	}
	if s.Search == "" {
		return true
	}
	q := strings.ToLower(s.Search)
	in := func(f string) bool { return strings.Contains(strings.ToLower(f), q) }
	if in(v.Name) || in(v.Description) || in(v.Category) {
		return true
	}
	for _, l := range v.Labels {
		if in(l) {
			return true
		}
	}
	return false
}
