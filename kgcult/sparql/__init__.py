"""sparql"""
