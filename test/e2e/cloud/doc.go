// Package cloud holds the end-to-end tests of the cloud provider plugins, each
// against a fake of its provider's API (internal/fakeupstream): the
// provider suite every plugin passes, cloning, saved voice ids, upstream
// failures and BYOK keys encrypted at rest.
package cloud
