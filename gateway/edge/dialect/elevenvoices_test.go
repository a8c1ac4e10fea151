package dialect

import (
	"errors"
	"slices"
	"testing"

	"github.com/voxgate/voxgate/gateway/problem"
)

func TestVoiceSearch(t *testing.T) {
	voices := []ElevenLabsVoice{
		NewElevenLabsVoice("alloy", "alloy", "", map[string]string{"alias": "true"}, false, 0),
		NewElevenLabsVoice("narrator", "narrator", "", map[string]string{"alias": "true", "model": "espeak/espeak-ng"}, false, 0),
		NewElevenLabsVoice("v-old", "Bea", "calm reader", map[string]string{"gender": "female", "language": "de"}, true, 100),
		NewElevenLabsVoice("v-new", "Al", "", map[string]string{"gender": "Male", "use_case": "news"}, true, 200),
	}
	ids := func(p ElevenLabsVoicesPage) []string {
		var out []string
		for _, v := range p.Voices {
			out = append(out, v.VoiceID)
		}
		return out
	}
	tests := []struct {
		name      string
		q         map[string][]string
		want      []string
		total     int
		nextToken string
	}{
		{"everything, in list order", nil, []string{"alloy", "narrator", "v-old", "v-new"}, 4, ""},
		{"a search in names", map[string][]string{"search": {"NARR"}}, []string{"narrator"}, 1, ""},
		{"a search in descriptions", map[string][]string{"search": {"calm"}}, []string{"v-old"}, 1, ""},
		{"a search in labels", map[string][]string{"search": {"espeak"}}, []string{"narrator"}, 1, ""},
		{"a search in categories", map[string][]string{"search": {"cloned"}}, []string{"v-old", "v-new"}, 2, ""},
		{"pages of two", map[string][]string{"page_size": {"2"}}, []string{"alloy", "narrator"}, 4, "2"},
		{"the second page", map[string][]string{"page_size": {"2"}, "next_page_token": {"2"}}, []string{"v-old", "v-new"}, 4, ""},
		{"past the end", map[string][]string{"next_page_token": {"9"}}, nil, 4, ""},
		{"by name", map[string][]string{"sort": {"name"}}, []string{"v-new", "alloy", "v-old", "narrator"}, 4, ""},
		{"by name, descending", map[string][]string{"sort": {"name"}, "sort_direction": {"desc"}}, []string{"narrator", "v-old", "alloy", "v-new"}, 4, ""},
		{"newest first, aliases last", map[string][]string{"sort": {"created_at_unix"}}, []string{"v-new", "v-old", "alloy", "narrator"}, 4, ""},
		{"oldest first, aliases last", map[string][]string{"sort": {"created_at_unix"}, "sort_direction": {"asc"}}, []string{"v-old", "v-new", "alloy", "narrator"}, 4, ""},
		{"personal", map[string][]string{"voice_type": {"personal"}}, []string{"v-old", "v-new"}, 2, ""},
		{"default", map[string][]string{"voice_type": {"default"}}, []string{"alloy", "narrator"}, 2, ""},
		{"community", map[string][]string{"voice_type": {"community"}}, nil, 0, ""},
		{"premade", map[string][]string{"category": {"premade"}}, []string{"alloy", "narrator"}, 2, ""},
		{"a gender label, any case", map[string][]string{"gender": {"male"}}, []string{"v-new"}, 1, ""},
		{"any of the languages", map[string][]string{"language": {"fr", "de"}}, []string{"v-old"}, 1, ""},
		{"a use case", map[string][]string{"use_cases": {"news"}}, []string{"v-new"}, 1, ""},
		{"by ids", map[string][]string{"voice_ids": {"v-new", "alloy"}}, []string{"alloy", "v-new"}, 2, ""},
		{"fine-tuned voices: none here", map[string][]string{"fine_tuning_state": {"fine_tuned"}}, nil, 0, ""},
		{"a collection: none here", map[string][]string{"collection_id": {"c"}}, nil, 0, ""},
		{"high quality: none here", map[string][]string{"high_quality": {"true"}}, nil, 0, ""},
		{"shared-library filters narrow nothing", map[string][]string{"min_notice_period_days": {"30"}, "include_custom_rates": {"false"}, "include_total_count": {"true"}}, []string{"alloy", "narrator", "v-old", "v-new"}, 4, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseVoiceSearch(tt.q)
			if err != nil {
				t.Fatal(err)
			}
			p := s.Page(voices)
			next := ""
			if p.NextPageToken != nil {
				next = *p.NextPageToken
			}
			if !slices.Equal(ids(p), tt.want) || p.TotalCount != tt.total || next != tt.nextToken || p.HasMore != (next != "") || p.Voices == nil {
				t.Errorf("got %v total %d next %q more %v", ids(p), p.TotalCount, next, p.HasMore)
			}
		})
	}
}

func TestVoiceSearchRefusesNamingTheParameter(t *testing.T) {
	tests := []struct {
		q    map[string][]string
		want string
	}{
		{map[string][]string{"page_size": {"101"}}, "page_size"},
		{map[string][]string{"page_size": {"0"}}, "page_size"},
		{map[string][]string{"next_page_token": {"abc"}}, "next_page_token"},
		{map[string][]string{"sort": {"age"}}, "sort"},
		{map[string][]string{"sort_direction": {"up"}}, "sort_direction"},
		{map[string][]string{"voice_type": {"mine"}}, "voice_type"},
		{map[string][]string{"category": {"famous"}}, "category"},
		{map[string][]string{"high_quality": {"yes"}}, "high_quality"},
		{map[string][]string{"min_notice_period_days": {"x"}}, "min_notice_period_days"},
		{map[string][]string{"limit": {"5"}}, "limit"},
	}
	for _, tt := range tests {
		_, err := ParseVoiceSearch(tt.q)
		var pe *problem.Error
		if !errors.As(err, &pe) || len(pe.Validation) != 1 || pe.Validation[0].Path[0] != tt.want {
			t.Errorf("%v: %v", tt.q, err)
		}
	}
}
