package mlxc

// The table of mlx-c releases (releases_gen.go) is generated from mlx-c's
// headers; MLXC_GIT is a clone of github.com/ml-explore/mlx-c (its git
// directory will do). Add a release by adding its tag here.
//go:generate go run ./internal/sigtab -git ${MLXC_GIT} -o releases_gen.go v0.1.0 v0.1.1 v0.1.2 v0.2.0 v0.3.0 v0.4.0 v0.4.1 v0.5.0 v0.6.0 fba4470
