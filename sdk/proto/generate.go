// Package pluginpb holds the generated gRPC code of the voxgate plugin
// protocol (voxgate.proto). Nobody edits the generated files by hand; run
// `go generate ./sdk/proto` (protoc, protoc-gen-go and protoc-gen-go-grpc on
// PATH) after changing voxgate.proto.
package pluginpb

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative voxgate.proto
