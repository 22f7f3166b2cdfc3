package postgres

// RenewChunk is how many keys one RenewClaims statement carries.
const RenewChunk = renewChunk
