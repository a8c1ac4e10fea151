package sdk

import (
	"context"
	"errors"
	"io"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginpb "github.com/voxgate/voxgate/sdk/proto"
)

// grpcProviderClient is the host side of a provider plugin: a Provider whose
// methods are gRPC calls to the plugin process.
type grpcProviderClient struct {
	rpc pluginpb.ProviderClient
}

var (
	_ Provider    = (*grpcProviderClient)(nil)
	_ Planner     = (*grpcProviderClient)(nil)
	_ Transcriber = (*grpcProviderClient)(nil)
)

// Configure implements Provider.
func (c *grpcProviderClient) Configure(ctx context.Context, settings map[string]string) error {
	_, err := c.rpc.Configure(ctx, &pluginpb.ConfigureRequest{Settings: settings})
	return errorFromRPC(ctx, "Configure", err)
}

// Describe implements Provider.
func (c *grpcProviderClient) Describe(ctx context.Context) (*Description, error) {
	resp, err := c.rpc.Describe(ctx, &pluginpb.DescribeRequest{})
	if err != nil {
		return nil, errorFromRPC(ctx, "Describe", err)
	}
	return descriptionFromProto(resp), nil
}

// Voices implements Provider.
func (c *grpcProviderClient) Voices(ctx context.Context, req *VoicesRequest) ([]Voice, error) {
	resp, err := c.rpc.Voices(ctx, &pluginpb.VoicesRequest{
		Model:       req.Model,
		Credentials: credentialsToProto(req.Credentials),
	})
	if err != nil {
		return nil, errorFromRPC(ctx, "Voices", err)
	}
	return voicesFromProto(resp), nil
}

// Synthesize implements Provider. Hot path: the clip is received with
// clipCodec, which copies it once (see there).
func (c *grpcProviderClient) Synthesize(ctx context.Context, req *SynthesizeRequest) (*SynthesizeResponse, error) {
	resp, err := c.rpc.Synthesize(ctx, synthesizeRequestToProto(req), grpc.ForceCodecV2(clipCodec{}))
	if err != nil {
		return nil, errorFromRPC(ctx, "Synthesize", err)
	}
	return synthesizeResponseFromProto(resp), nil
}

// Stream implements Provider. It is the protocol's hot path: one gRPC
// message per chunk, received into a single reused message value, so the
// only allocation per chunk is the data slice the receiver is allowed to
// keep (proto.Unmarshal copies bytes fields out of gRPC's pooled buffer).
func (c *grpcProviderClient) Stream(ctx context.Context, req *SynthesizeRequest, send func(Chunk) error) error {
	// Cancelling streamCtx when we return tells the plugin to stop, which
	// matters when send failed (the client went away) mid-stream.
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.Stream(streamCtx, synthesizeRequestToProto(req))
	if err != nil {
		return errorFromRPC(ctx, "Stream", err)
	}
	var msg pluginpb.Chunk
	for {
		if err := stream.RecvMsg(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return errorFromRPC(ctx, "Stream", err)
		}
		ch := Chunk{MediaType: msg.MediaType, Data: msg.Data}
		if len(msg.Billed) > 0 { // rare: once a stream, if the provider says
			ch.Billed = billedFromProto(msg.Billed)
		}
		if err := send(ch); err != nil {
			return err
		}
	}
}

// Clone implements Provider.
func (c *grpcProviderClient) Clone(ctx context.Context, req *CloneRequest) (*CloneResponse, error) {
	resp, err := c.rpc.Clone(ctx, cloneRequestToProto(req))
	if err != nil {
		return nil, errorFromRPC(ctx, "Clone", err)
	}
	return &CloneResponse{VoiceID: resp.GetVoiceId()}, nil
}

// Plan implements Planner. Callers check Description.Plans first: a
// plugin that does not plan answers KindUnsupported.
func (c *grpcProviderClient) Plan(ctx context.Context, req *PlanRequest) (*Plan, error) {
	resp, err := c.rpc.Plan(ctx, &pluginpb.PlanRequest{Request: synthesizeRequestToProto(req.Request), Stream: req.Stream})
	if err != nil {
		return nil, errorFromRPC(ctx, "Plan", err)
	}
	return planFromProto(resp), nil
}

// Explain implements Planner. The explanation travels as the call's error
// status; a call that fails for another reason (the plugin died) returns
// an error whose UpstreamStatus is not f.Status, which callers can tell
// apart.
func (c *grpcProviderClient) Explain(ctx context.Context, f *Failure) error {
	_, err := c.rpc.Explain(ctx, failureToProto(f))
	if err == nil {
		return Errorf(KindUpstream, "HTTP status %d", f.Status)
	}
	return errorFromRPC(ctx, "Explain", err)
}

// Transcribe implements Transcriber. Callers check
// Description.Transcribes first: a plugin that does not transcribe
// answers KindUnsupported.
func (c *grpcProviderClient) Transcribe(ctx context.Context, req *TranscribeRequest) (*Transcript, error) {
	resp, err := c.rpc.Transcribe(ctx, transcribeRequestToProto(req))
	if err != nil {
		return nil, errorFromRPC(ctx, "Transcribe", err)
	}
	return transcriptFromProto(resp), nil
}

// grpcProviderServer is the plugin side of a provider plugin: a gRPC service
// that calls the plugin author's Provider. Errors leave it as statuses
// carrying an *Error (errorToStatus); panics become KindInternal errors.
type grpcProviderServer struct {
	pluginpb.UnimplementedProviderServer
	impl Provider
}

// Configure implements pluginpb.ProviderServer.
func (s *grpcProviderServer) Configure(ctx context.Context, req *pluginpb.ConfigureRequest) (_ *pluginpb.ConfigureResponse, err error) {
	defer recoverToError("Configure", &err)
	if err := s.impl.Configure(ctx, req.GetSettings()); err != nil {
		return nil, errorToStatus(err)
	}
	return &pluginpb.ConfigureResponse{}, nil
}

// Describe implements pluginpb.ProviderServer.
func (s *grpcProviderServer) Describe(ctx context.Context, _ *pluginpb.DescribeRequest) (_ *pluginpb.Description, err error) {
	defer recoverToError("Describe", &err)
	d, err := s.impl.Describe(ctx)
	if err != nil {
		return nil, errorToStatus(err)
	}
	if d == nil {
		return nil, errorToStatus(Errorf(KindInternal, "Describe returned no description"))
	}
	// A model that lists only Encodings is described to the gateway with
	// the older fields derived too (a copy: the plugin's value is its own).
	described := *d
	described.Models = slices.Clone(d.Models)
	for i := range described.Models {
		described.Models[i].describeEncodings()
	}
	out := descriptionToProto(&described)
	_, out.Plans = s.impl.(Planner)
	if _, ok := s.impl.(InputStreamer); !ok {
		// A model cannot claim what the provider does not implement.
		for _, m := range out.Models {
			if m.Capabilities != nil {
				m.Capabilities.InputStreaming = false
			}
		}
	}
	_, out.Transcribes = s.impl.(Transcriber)
	return out, nil
}

// Voices implements pluginpb.ProviderServer.
func (s *grpcProviderServer) Voices(ctx context.Context, req *pluginpb.VoicesRequest) (_ *pluginpb.VoicesResponse, err error) {
	defer recoverToError("Voices", &err)
	vs, err := s.impl.Voices(ctx, &VoicesRequest{
		Model:       req.GetModel(),
		Credentials: credentialsFromProto(req.GetCredentials()),
	})
	if err != nil {
		return nil, errorToStatus(err)
	}
	return voicesToProto(vs), nil
}

// Synthesize implements pluginpb.ProviderServer.
func (s *grpcProviderServer) Synthesize(ctx context.Context, req *pluginpb.SynthesizeRequest) (_ *pluginpb.SynthesizeResponse, err error) {
	defer recoverToError("Synthesize", &err)
	resp, err := s.impl.Synthesize(ctx, synthesizeRequestFromProto(req))
	if err != nil {
		return nil, errorToStatus(err)
	}
	if resp == nil {
		return nil, errorToStatus(Errorf(KindInternal, "Synthesize returned no response"))
	}
	return synthesizeResponseToProto(resp), nil
}

// Stream implements pluginpb.ProviderServer. Hot path: each Chunk becomes
// one message that borrows the chunk's data slice (Chunk's contract forbids
// the sender to reuse it), so nothing is copied before gRPC encodes it.
func (s *grpcProviderServer) Stream(req *pluginpb.SynthesizeRequest, stream pluginpb.Provider_StreamServer) (err error) {
	defer recoverToError("Stream", &err)
	send := func(c Chunk) error {
		// A fresh message per send: gRPC may hold on to a sent message
		// (stats handlers), so reusing one is not allowed.
		return stream.Send(&pluginpb.Chunk{MediaType: c.MediaType, Data: c.Data, Billed: billedToProto(c.Billed)})
	}
	return errorToStatus(s.impl.Stream(stream.Context(), synthesizeRequestFromProto(req), send))
}

// Clone implements pluginpb.ProviderServer.
func (s *grpcProviderServer) Clone(ctx context.Context, req *pluginpb.CloneRequest) (_ *pluginpb.CloneResponse, err error) {
	defer recoverToError("Clone", &err)
	resp, err := s.impl.Clone(ctx, cloneRequestFromProto(req))
	if err != nil {
		return nil, errorToStatus(err)
	}
	if resp == nil {
		return nil, errorToStatus(Errorf(KindInternal, "Clone returned no response"))
	}
	return &pluginpb.CloneResponse{VoiceId: resp.VoiceID}, nil
}

// Plan implements pluginpb.ProviderServer.
func (s *grpcProviderServer) Plan(ctx context.Context, req *pluginpb.PlanRequest) (_ *pluginpb.HTTPPlan, err error) {
	defer recoverToError("Plan", &err)
	pl, ok := s.impl.(Planner)
	if !ok {
		return nil, errorToStatus(Errorf(KindUnsupported, "this provider does not plan requests"))
	}
	p, err := pl.Plan(ctx, &PlanRequest{Request: synthesizeRequestFromProto(req.GetRequest()), Stream: req.GetStream()})
	if err != nil {
		return nil, errorToStatus(err)
	}
	if p == nil {
		return nil, errorToStatus(Errorf(KindInternal, "Plan returned no plan"))
	}
	if _, err := p.TextSlot(); err != nil {
		return nil, errorToStatus(Errorf(KindInternal, "%v", err))
	}
	return planToProto(p), nil
}

// Explain implements pluginpb.ProviderServer: the explanation is the
// call's error status.
func (s *grpcProviderServer) Explain(ctx context.Context, f *pluginpb.Failure) (_ *pluginpb.ExplainResponse, err error) {
	defer recoverToError("Explain", &err)
	pl, ok := s.impl.(Planner)
	if !ok {
		return nil, errorToStatus(Errorf(KindUnsupported, "this provider does not plan requests"))
	}
	e := pl.Explain(ctx, failureFromProto(f))
	if e == nil {
		e = Errorf(KindUpstream, "HTTP status %d", f.GetStatus())
	}
	return nil, errorToStatus(e)
}

var _ InputStreamer = (*grpcProviderClient)(nil)

// StreamInput implements InputStreamer over one bidirectional gRPC stream:
// the request, then each TextInput as a message from a goroutine that
// forwards in (and closes the sending side when in is closed), while this
// goroutine receives events. Callers check the model's
// Capabilities.InputStreaming first: a plugin without the method answers
// KindUnsupported.
func (c *grpcProviderClient) StreamInput(ctx context.Context, req *SynthesizeRequest, in <-chan TextInput, send func(StreamEvent) error) error {
	// Cancelling streamCtx when we return tells the plugin to stop, and
	// ends the forwarding goroutine.
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.StreamInput(streamCtx)
	if err != nil {
		return errorFromRPC(ctx, "StreamInput", err)
	}
	// A failed Send means the stream is over; Recv below reports why.
	if err := stream.Send(&pluginpb.InputMessage{Request: synthesizeRequestToProto(req)}); err == nil {
		go forwardInput(streamCtx, stream, in)
	}
	for {
		msg := new(pluginpb.StreamEvent)
		if err := stream.RecvMsg(msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return errorFromRPC(ctx, "StreamInput", err)
		}
		if err := send(streamEventFromProto(msg)); err != nil {
			return err
		}
	}
}

// forwardInput sends each TextInput of in to the plugin and closes the
// sending side when in is closed. It is the stream's only sender.
func forwardInput(ctx context.Context, stream pluginpb.Provider_StreamInputClient, in <-chan TextInput) {
	for {
		select {
		case t, ok := <-in:
			if !ok {
				_ = stream.CloseSend()
				return
			}
			if stream.Send(&pluginpb.InputMessage{Text: t.Text, Flush: t.Flush}) != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// StreamInput implements pluginpb.ProviderServer: the first message is the
// request, the rest are text relayed to the implementation through a
// channel that is closed when the gateway closes its side.
func (s *grpcProviderServer) StreamInput(stream pluginpb.Provider_StreamInputServer) (err error) {
	defer recoverToError("StreamInput", &err)
	is, ok := s.impl.(InputStreamer)
	if !ok {
		return errorToStatus(Errorf(KindUnsupported, "this provider does not take input streams"))
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	if first.GetRequest() == nil {
		return errorToStatus(Errorf(KindInternal, "the input stream's first message carries no request"))
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	in := make(chan TextInput)
	go func() {
		for {
			m, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				close(in) // the input ended: a closed in means only that
				return
			}
			if err != nil {
				// The gateway cancelled or went away: ctx says so, and in
				// stays open so it is never mistaken for the end of input.
				return
			}
			select {
			case in <- TextInput{Text: m.GetText(), Flush: m.GetFlush()}:
			case <-ctx.Done():
				return
			}
		}
	}()
	send := func(e StreamEvent) error { return stream.Send(streamEventToProto(&e)) }
	return errorToStatus(is.StreamInput(ctx, synthesizeRequestFromProto(first.GetRequest()), in, send))
}

// Transcribe implements pluginpb.ProviderServer.
func (s *grpcProviderServer) Transcribe(ctx context.Context, req *pluginpb.TranscribeRequest) (_ *pluginpb.Transcript, err error) {
	defer recoverToError("Transcribe", &err)
	tr, ok := s.impl.(Transcriber)
	if !ok {
		return nil, errorToStatus(Errorf(KindUnsupported, "this provider does not transcribe"))
	}
	t, err := tr.Transcribe(ctx, transcribeRequestFromProto(req))
	if err != nil {
		return nil, errorToStatus(err)
	}
	if t == nil {
		return nil, errorToStatus(Errorf(KindInternal, "Transcribe returned no transcript"))
	}
	return transcriptToProto(t), nil
}

// validateSettings implements remoteSettingsValidator: the plugin process
// checks the settings.
func (c *grpcProviderClient) validateSettings(ctx context.Context, settings map[string]string) ([]SettingProblem, bool, error) {
	resp, err := c.rpc.ValidateSettings(ctx, &pluginpb.ConfigureRequest{Settings: settings})
	return settingsFromRPC(ctx, resp, err)
}

// settingsFromRPC reads a ValidateSettings answer. A plugin built before
// the call existed answers UNIMPLEMENTED, which is "not checked", not a
// failure.
func settingsFromRPC(ctx context.Context, resp *pluginpb.ValidateSettingsResponse, err error) ([]SettingProblem, bool, error) {
	if status.Code(err) == codes.Unimplemented {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, errorFromRPC(ctx, "ValidateSettings", err)
	}
	problems := make([]SettingProblem, 0, len(resp.GetProblems()))
	for _, p := range resp.GetProblems() {
		problems = append(problems, SettingProblem{Path: p.GetPath(), Message: p.GetMessage()})
	}
	return problems, !resp.GetUnchecked(), nil
}

// ValidateSettings implements pluginpb.ProviderServer through the sdk's
// ValidateSettings: the implementation's own check, its settings struct,
// or "unchecked".
func (s *grpcProviderServer) ValidateSettings(ctx context.Context, req *pluginpb.ConfigureRequest) (_ *pluginpb.ValidateSettingsResponse, err error) {
	defer recoverToError("ValidateSettings", &err)
	return settingsToRPC(ValidateSettings(ctx, s.impl, req.GetSettings()))
}

// settingsToRPC is a ValidateSettings answer.
func settingsToRPC(problems []SettingProblem, checked bool, err error) (*pluginpb.ValidateSettingsResponse, error) {
	if err != nil {
		return nil, errorToStatus(err)
	}
	out := &pluginpb.ValidateSettingsResponse{Unchecked: !checked}
	for _, p := range problems {
		out.Problems = append(out.Problems, &pluginpb.SettingProblem{Path: p.Path, Message: p.Message})
	}
	return out, nil
}
