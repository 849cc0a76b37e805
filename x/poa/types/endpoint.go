package types

import (
	"net"
	"net/url"
	"strconv"

	errorsmod "cosmossdk.io/errors"
)

// MaxEndpointBytes bounds a data-plane endpoint: every node keeps one per validator.
const MaxEndpointBytes = 200

// ValidateEndpoint checks a data-plane endpoint: empty (none), or http(s)://host:port with a
// port from 1 to 65535 and nothing else (no path, query, fragment or credentials), so that
// peers build their request URLs from it alone.
func ValidateEndpoint(endpoint string) error {
	if endpoint == "" {
		return nil
	}
	if len(endpoint) > MaxEndpointBytes {
		return errorsmod.Wrapf(ErrInvalidEndpoint, "%d bytes, at most %d", len(endpoint), MaxEndpointBytes)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return errorsmod.Wrapf(ErrInvalidEndpoint, "%q: %v", endpoint, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errorsmod.Wrapf(ErrInvalidEndpoint, "%q: want http:// or https://", endpoint)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return errorsmod.Wrapf(ErrInvalidEndpoint, "%q: want scheme, host and port only", endpoint)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return errorsmod.Wrapf(ErrInvalidEndpoint, "%q: want host:port", endpoint)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return errorsmod.Wrapf(ErrInvalidEndpoint, "%q: port %q", endpoint, port)
	}
	return nil
}

// DataPlaneKeyBytes is the size of a data-plane key: an ed25519 public key.
const DataPlaneKeyBytes = 32

// ValidateDataPlaneKey checks a data-plane key: empty (the consensus key signs) or 32 bytes.
// Which bytes an ed25519 key holds is not checked here: a key nobody holds the private half of
// costs its own validator the data plane, as a wrong endpoint does.
func ValidateDataPlaneKey(key []byte) error {
	if len(key) != 0 && len(key) != DataPlaneKeyBytes {
		return errorsmod.Wrapf(ErrInvalidDataPlaneKey, "%d bytes, want an ed25519 public key of %d", len(key), DataPlaneKeyBytes)
	}
	return nil
}
