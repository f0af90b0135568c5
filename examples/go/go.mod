module coldstart.example/server

go 1.22
