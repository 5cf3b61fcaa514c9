"""Parse stage, what a big input is reduced to, and why.

`policy.KeepPolicy` is what the consumers (rules, hang, align, diff) search unknown lines for, declared by
them and passed down by the session; `inert` rejects at once the lines no pattern of the grammar or of the
policy can claim; `evidence` keeps the unknown lines a consumer may cite; `bounded` keeps the first and the
last rows of a table that grows with the lines read, and counts the rest.
"""
