// Package types holds what x/poa shares with its clients: the messages only governance may send
// (MsgAdmitValidator, MsgSetValidatorPower, MsgRemoveValidator), the Admission state and its
// queries, the genesis (admissions, and the Grants and Clawbacks that record the stake x/poa
// minted for operators and burns when their power drops or they leave), the store keys, the
// registered errors with their codes, and the bound on an admitted power (CometBFT caps the
// total voting power). Nothing here touches state: x/poa/keeper does.
package types
