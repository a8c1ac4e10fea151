// Package pluginpb holds the generated gRPC code of the voxgate plugin
// protocol (voxgate.proto). Nobody edits the generated files by hand; run
// `make proto` after changing voxgate.proto (it installs protoc and the Go
// plugins at the versions go.mod pins, then runs go generate here).
package pluginpb

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative voxgate.proto
